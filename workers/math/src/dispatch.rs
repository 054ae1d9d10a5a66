//! Numeric kernels compiled twice: for AVX2 and FMA where the processor has them, and for
//! baseline x86-64; and whether a third, AVX-512 copy of a kernel runs ([`has_avx512`]).

/// Defines a function whose body is compiled twice: for AVX2 with FMA, used when the processor
/// has both (std checks once and caches the answer), and for the baseline x86-64 (SSE2)
/// otherwise. The two give the same bits: Rust never contracts `a * b + c` into a fused
/// multiply-add and keeps the order of every operation, so AVX2 changes only how many lanes
/// an instruction holds; an explicit [`crate::fma`] is one instruction in the first copy and
/// the C library's correctly rounded `fma` in the second, the same value. Write the body with
/// its lanes in local arrays (`[f64; 4]`) so that the compiler keeps each in one vector.
///
/// ```
/// armada_math::avx2_dispatch! {
///     /// Four sums of squares.
///     pub fn squares(xs: &[[f64; 4]]) -> [f64; 4] {
///         let mut acc = [0.0; 4];
///         for x in xs {
///             for l in 0..4 {
///                 acc[l] += x[l] * x[l];
///             }
///         }
///         acc
///     }
/// }
/// assert_eq!(squares(&[[1.0, 2.0, 3.0, 4.0], [1.0; 4]]), [2.0, 5.0, 10.0, 17.0]);
/// ```
#[macro_export]
macro_rules! avx2_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: the processor supports AVX2 and FMA, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

/// Whether kernels with an AVX-512 copy run it: the processor has AVX-512F, and
/// `ARMADA_NO_AVX512` is not `1` (which keeps them on their AVX2 copies, to compare the two on
/// one machine). The copies give the same bits as the others; they only hold more lanes.
/// Read once per process.
#[cfg(target_arch = "x86_64")]
pub fn has_avx512() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f") && std::env::var_os("ARMADA_NO_AVX512").is_none_or(|v| v != "1")
    })
}
