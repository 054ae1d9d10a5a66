//! What processor this worker runs on, as it tells the coordinator at registration: the
//! model and the x86-64 feature level. armada's numerics give the same bits on every
//! processor (armada-math, armada-linalg); the coordinator records this beside every
//! trajectory so that, were that ever not so, the records would say which processor ran what.

/// `"<model> (<level>)"`, e.g. `Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz (x86-64-v4)`.
pub fn describe() -> String {
    let model = model().unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{model} ({})", level())
}

/// The model name the kernel reports (Linux), if any.
fn model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").and_then(|rest| rest.split_once(':')).map(|(_, m)| m.trim().to_string())
        })
        .filter(|m| !m.is_empty())
}

/// The x86-64 microarchitecture level (psABI's v1 to v4) the processor supports, or the
/// architecture's name elsewhere.
pub fn level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let v2 =
            has!("sse3") && has!("ssse3") && has!("sse4.1") && has!("sse4.2") && has!("popcnt") && has!("cmpxchg16b");
        let v3 = v2
            && has!("avx")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("f16c")
            && has!("fma")
            && has!("lzcnt")
            && has!("movbe")
            && has!("xsave");
        let v4 = v3 && has!("avx512f") && has!("avx512bw") && has!("avx512cd") && has!("avx512dq") && has!("avx512vl");
        if v4 {
            "x86-64-v4"
        } else if v3 {
            "x86-64-v3"
        } else if v2 {
            "x86-64-v2"
        } else {
            "x86-64-v1"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH
    }
}

#[cfg(test)]
mod tests {
    /// The level agrees with the flags the kernel lists, and the description carries both
    /// parts.
    #[test]
    fn the_level_matches_the_kernels_flags() {
        let level = super::level();
        let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else { return };
        let flags: Vec<&str> = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("flags").and_then(|r| r.split_once(':')).map(|(_, f)| f.split_whitespace().collect())
            })
            .unwrap_or_default();
        let has = |f: &str| flags.contains(&f);
        let expected = if has("avx512f")
            && has("avx512bw")
            && has("avx512cd")
            && has("avx512dq")
            && has("avx512vl")
            && has("avx2")
        {
            "x86-64-v4"
        } else if has("avx2") && has("fma") && has("bmi2") && has("movbe") {
            "x86-64-v3"
        } else if has("sse4_2") && has("popcnt") && has("ssse3") {
            "x86-64-v2"
        } else {
            "x86-64-v1"
        };
        assert_eq!(level, expected, "flags: {flags:?}");
        let described = super::describe();
        assert!(described.ends_with(&format!("({level})")) && described.len() > level.len() + 3, "{described}");
    }
}
