//! The MovieLens-100K environment (paper Section 5): rank-20 matrix factorisation of the 100,000
//! ratings, then a bandit whose arms are 300 random movies per round and whose `theta*` is the
//! normalised mean of 300 random users' factors.
//!
//! * **Data.** The ratings come from the `recbole==1.2.1` wheel on PyPI
//!   (`recbole/dataset_example/ml-100k/ml-100k.inter`); `analysis/fetch_movielens.py` downloads and
//!   checks it into the data directory ([`ratings_path`]). Nothing is downloaded at run time or test
//!   time: a missing file is an error that says how to get it. Tests and CI sweeps use
//!   [`Ratings::standin`], a seeded low-rank rating matrix of the same shape (943 users, 1682
//!   movies, 100,000 ratings in 1..5).
//! * **Factorisation.** The paper uses LIBPMF (CCD++) at rank 20 with its defaults
//!   (`lambda = 0.1`); ALS is our substitute for it. [`factorize`] runs alternating
//!   ridge solves on `sum (r - u^T m)^2 + lambda (sum ||u||^2 + sum ||m||^2)` from a fixed seed, so
//!   the factors are a pure function of the ratings, shared by every repetition.
//! * **Per repetition** `theta*` = mean of 300 users' factors drawn without replacement, scaled to
//!   unit norm. **Per round** 300 movies drawn without replacement, each divided by the largest norm
//!   among the 300 (the reference code's normalisation; the paper's text suggests a global one).
//!   Linear rewards have noise std `sqrt(0.5)` by default (the paper's variance 0.5; the code uses
//!   0.5); logistic rewards are Bernoulli.

use crate::env::{ArmSet, Environment, RewardModel};
use crate::linalg::{cholesky_in_place, cholesky_solve_in_place, dot, norm};
use armada_core::StreamRng;
use armada_math::dist::{Distribution, StandardNormal};
use ndarray::ArrayView2;
use rand::seq::index;
use rand::{RngCore, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Shape of MovieLens-100K.
pub const N_USERS: usize = 943;
pub const N_MOVIES: usize = 1682;
pub const N_RATINGS: usize = 100_000;
/// The paper's factor rank and regulariser (LIBPMF `-k 20`, default `lambda`).
pub const RANK: usize = 20;
pub const LAMBDA: f64 = 0.1;
/// Alternating sweeps (LIBPMF runs 5 outer iterations).
pub const SWEEPS: usize = 10;
/// File name of the ratings inside the data directory.
pub const RATINGS_FILE: &str = "ml-100k.inter";

/// One rating, with dense 0-based user and movie indices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    pub user: u32,
    pub movie: u32,
    pub value: f64,
}

/// A sparse rating matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratings {
    pub n_users: usize,
    pub n_movies: usize,
    pub entries: Vec<Rating>,
}

impl Ratings {
    /// Parses tab-separated `user item rating [timestamp]` lines: recbole's `.inter` file (a header
    /// line naming the columns) or GroupLens' `u.data` (no header). Ids become dense indices in
    /// numeric order.
    pub fn parse(text: &str) -> Result<Ratings, String> {
        let mut raw = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split('\t').collect();
            if line.trim().is_empty() || (i == 0 && fields[0].starts_with("user_id")) {
                continue;
            }
            let bad = || format!("line {}: expected `user<TAB>item<TAB>rating[<TAB>timestamp]`, got {line:?}", i + 1);
            if fields.len() < 3 {
                return Err(bad());
            }
            let user: u64 = fields[0].trim().parse().map_err(|_| bad())?;
            let movie: u64 = fields[1].trim().parse().map_err(|_| bad())?;
            let value: f64 = fields[2].trim().parse().map_err(|_| bad())?;
            if !value.is_finite() {
                return Err(bad());
            }
            raw.push((user, movie, value));
        }
        let dense = |ids: Vec<u64>| -> HashMap<u64, u32> {
            let sorted: BTreeMap<u64, ()> = ids.into_iter().map(|id| (id, ())).collect();
            sorted.keys().enumerate().map(|(i, &id)| (id, i as u32)).collect()
        };
        let users = dense(raw.iter().map(|r| r.0).collect());
        let movies = dense(raw.iter().map(|r| r.1).collect());
        let entries = raw.iter().map(|&(u, m, value)| Rating { user: users[&u], movie: movies[&m], value }).collect();
        Ok(Ratings { n_users: users.len(), n_movies: movies.len(), entries })
    }

    /// A seeded stand-in with MovieLens-100K's shape: a rank-5 taste model plus user and movie
    /// biases, rounded to 1..5; every user rates at least 20 movies, as in the real data.
    pub fn standin(seed: u64) -> Ratings {
        let mut rng = StreamRng::seed_from_u64(seed);
        let taste = 5;
        let normal = |n: usize, rng: &mut StreamRng| -> Vec<f64> {
            (0..n).map(|_| StandardNormal.sample(rng)).collect::<Vec<f64>>()
        };
        let (u, m) = (normal(N_USERS * taste, &mut rng), normal(N_MOVIES * taste, &mut rng));
        let (user_bias, movie_bias) = (normal(N_USERS, &mut rng), normal(N_MOVIES, &mut rng));
        let mut per_user = vec![20usize; N_USERS];
        for _ in 0..(N_RATINGS - 20 * N_USERS) {
            per_user[(rng.next_u64() % N_USERS as u64) as usize] += 1;
        }
        let mut entries = Vec::with_capacity(N_RATINGS);
        for (user, &count) in per_user.iter().enumerate() {
            for movie in index::sample(&mut rng, N_MOVIES, count.min(N_MOVIES)).into_iter() {
                let score = 3.5
                    + 0.4 * user_bias[user]
                    + 0.4 * movie_bias[movie]
                    + 0.3 * dot(&u[user * taste..][..taste], &m[movie * taste..][..taste]);
                let value = score.round().clamp(1.0, 5.0);
                entries.push(Rating { user: user as u32, movie: movie as u32, value });
            }
        }
        Ratings { n_users: N_USERS, n_movies: N_MOVIES, entries }
    }

    /// Errors unless this is MovieLens-100K's shape.
    pub fn check_shape(&self) -> Result<(), String> {
        let shape = (self.n_users, self.n_movies, self.entries.len());
        if shape != (N_USERS, N_MOVIES, N_RATINGS) {
            return Err(format!(
                "expected MovieLens-100K ({N_USERS} users, {N_MOVIES} movies, {N_RATINGS} ratings), got {} users, {} movies, {} ratings",
                shape.0, shape.1, shape.2
            ));
        }
        Ok(())
    }
}

/// User and movie factors, row-major (`n x rank`).
#[derive(Clone, Debug, PartialEq)]
pub struct Factors {
    pub rank: usize,
    pub users: Vec<f64>,
    pub movies: Vec<f64>,
}

impl Factors {
    pub fn n_users(&self) -> usize {
        self.users.len() / self.rank
    }
    pub fn n_movies(&self) -> usize {
        self.movies.len() / self.rank
    }
    pub fn user(&self, i: usize) -> &[f64] {
        &self.users[i * self.rank..][..self.rank]
    }
    pub fn movie(&self, j: usize) -> &[f64] {
        &self.movies[j * self.rank..][..self.rank]
    }

    /// `sum (r - u^T m)^2 + lambda (||U||^2 + ||M||^2)`, the objective [`factorize`] descends.
    pub fn objective(&self, ratings: &Ratings, lambda: f64) -> f64 {
        let fit: f64 = ratings
            .entries
            .iter()
            .map(|r| (r.value - dot(self.user(r.user as usize), self.movie(r.movie as usize))).powi(2))
            .sum();
        let sq = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        fit + lambda * (sq(&self.users) + sq(&self.movies))
    }
}

/// Alternating least squares from a fixed seed: movies start `N(0, 0.1^2)`, then each sweep solves
/// every user's ridge problem given the movies, then every movie's given the users. Each half-sweep
/// minimises the objective exactly in its block, so the objective never increases.
pub fn factorize(ratings: &Ratings, rank: usize, lambda: f64, sweeps: usize) -> Factors {
    let mut rng = StreamRng::seed_from_u64(0x4d4c_3130_304b);
    let mut factors = Factors {
        rank,
        users: vec![0.0; ratings.n_users * rank],
        movies: (0..ratings.n_movies * rank)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                0.1 * z
            })
            .collect(),
    };
    let (by_user, by_movie) = group(ratings);
    for _ in 0..sweeps {
        solve_block(&mut factors.users, &factors.movies, &by_user, rank, lambda);
        solve_block(&mut factors.movies, &factors.users, &by_movie, rank, lambda);
    }
    factors
}

/// (other index, rating) lists per user and per movie.
type Groups = Vec<Vec<(usize, f64)>>;

fn group(ratings: &Ratings) -> (Groups, Groups) {
    let mut by_user = vec![Vec::new(); ratings.n_users];
    let mut by_movie = vec![Vec::new(); ratings.n_movies];
    for r in &ratings.entries {
        by_user[r.user as usize].push((r.movie as usize, r.value));
        by_movie[r.movie as usize].push((r.user as usize, r.value));
    }
    (by_user, by_movie)
}

/// Row i of `rows` = argmin_w sum_{(j, r) in groups[i]} (r - w^T other_j)^2 + lambda ||w||^2.
fn solve_block(rows: &mut [f64], other: &[f64], groups: &Groups, rank: usize, lambda: f64) {
    let mut a = vec![0.0; rank * rank];
    for (i, group) in groups.iter().enumerate() {
        a.iter_mut().for_each(|v| *v = 0.0);
        let w = &mut rows[i * rank..][..rank];
        w.iter_mut().for_each(|v| *v = 0.0);
        for &(j, r) in group {
            let x = &other[j * rank..][..rank];
            for p in 0..rank {
                w[p] += r * x[p];
                for q in 0..=p {
                    a[p * rank + q] += x[p] * x[q];
                }
            }
        }
        for p in 0..rank {
            a[p * rank + p] += lambda;
            for q in 0..p {
                a[q * rank + p] = a[p * rank + q];
            }
        }
        cholesky_in_place(&mut a, rank).expect("X^T X + lambda I with lambda > 0 is positive definite");
        cholesky_solve_in_place(&a, w);
    }
}

/// Where the ratings file is read from: `$ARMADA_MOVIELENS` when set, else
/// `<data dir>/ml-100k.inter` with the data dir `$ARMADA_DATA_DIR`, `$XDG_CACHE_HOME/armada` or
/// `~/.cache/armada`.
pub fn ratings_path() -> PathBuf {
    if let Some(path) = std::env::var_os("ARMADA_MOVIELENS") {
        return PathBuf::from(path);
    }
    data_dir().join(RATINGS_FILE)
}

fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ARMADA_DATA_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("."));
    cache.join("armada")
}

/// Which ratings a job factorises.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RatingsSource {
    /// MovieLens-100K from [`ratings_path`].
    MovieLens,
    /// [`Ratings::standin`] with this seed.
    StandIn(u64),
    /// No ratings: the CDT authors' factors as they ship them ([`read_cdt_authors_factors`]).
    CdtAuthorsFactors,
}

/// The factors of `source`, computed once per process.
pub fn factors(source: &RatingsSource) -> Result<Arc<Factors>, String> {
    static CACHE: OnceLock<Mutex<HashMap<RatingsSource, Arc<Factors>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(f) = cache.lock().expect("no panics while holding the lock").get(source) {
        return Ok(f.clone());
    }
    let f = Arc::new(match source {
        RatingsSource::StandIn(seed) => factorize(&Ratings::standin(*seed), RANK, LAMBDA, SWEEPS),
        RatingsSource::MovieLens => factorize(&read_movielens(&ratings_path())?, RANK, LAMBDA, SWEEPS),
        RatingsSource::CdtAuthorsFactors => read_cdt_authors_factors(&data_dir().join(CDT_AUTHORS_DIR))?,
    });
    cache.lock().expect("no panics while holding the lock").insert(source.clone(), f.clone());
    Ok(f)
}

fn read_movielens(path: &Path) -> Result<Ratings, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "MovieLens-100K ratings not readable at {} ({e}). Get them with `python3 analysis/fetch_movielens.py` \
             (downloads the recbole 1.2.1 wheel from PyPI and extracts ml-100k.inter), or point ARMADA_MOVIELENS \
             at the file; benchmark parameter data = \"standin\" runs on generated ratings instead",
            path.display()
        )
    })?;
    let ratings = Ratings::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    ratings.check_shape().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(ratings)
}

/// Where [`read_cdt_authors_factors`] looks, inside the data directory.
pub const CDT_AUTHORS_DIR: &str = "cdt-authors";

/// The CDT authors' precomputed factors, `movie.csv` (1682 x 20) and `user.csv` (943 x 20) from
/// their repository's `CDT_exp/data/`, copied by the user into `dir` (never shipped with armada;
/// they serve only as a cross-check of the environment: they do not reconstruct the ratings).
pub fn read_cdt_authors_factors(dir: &Path) -> Result<Factors, String> {
    let read = |name: &str, rows: usize| -> Result<Vec<f64>, String> {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "the CDT authors' factors are not readable at {} ({e}): copy movie.csv and user.csv from \
                 their repository's CDT_exp/data/ (kangyue1997/Bandit-Continuous-Hyperparameter-Optimization) \
                 into {}, or use data = \"ml-100k\"",
                path.display(),
                dir.display()
            )
        })?;
        parse_factor_csv(&text, rows, RANK).map_err(|e| format!("{}: {e}", path.display()))
    };
    Ok(Factors { rank: RANK, users: read("user.csv", N_USERS)?, movies: read("movie.csv", N_MOVIES)? })
}

/// A factor table as the CDT authors write it (pandas' `to_csv`): a header row, then one row per
/// user or movie, an index column and `rank` values; returned row-major without the index.
pub fn parse_factor_csv(text: &str, rows: usize, rank: usize) -> Result<Vec<f64>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    lines.next().ok_or("the file is empty")?;
    let mut values = Vec::with_capacity(rows * rank);
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() != rank + 1 {
            return Err(format!("row {} has {} cells, expected an index and {rank} values", i + 1, cells.len()));
        }
        for cell in &cells[1..] {
            let v: f64 = cell.trim().parse().map_err(|_| format!("row {}: {cell:?} is not a number", i + 1))?;
            if !v.is_finite() {
                return Err(format!("row {}: {cell:?} is not finite", i + 1));
            }
            values.push(v);
        }
    }
    if values.len() != rows * rank {
        return Err(format!("{} rows, expected {rows}", values.len() / rank));
    }
    Ok(values)
}

/// Arms per round, users averaged into `theta*`, horizon and reward model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MovieLensConfig {
    pub n_arms: usize,
    pub n_theta_users: usize,
    pub horizon: usize,
    pub rewards: RewardModel,
}

impl MovieLensConfig {
    /// K = 300 movies, 300 users, T = 14,000; linear noise std sqrt(0.5) (paper Section 5's variance 0.5).
    pub fn paper(rewards: RewardModel) -> Self {
        MovieLensConfig { n_arms: 300, n_theta_users: 300, horizon: 14_000, rewards }
    }
    /// Linear rewards with the paper's variance 0.5.
    pub fn paper_linear_noise() -> RewardModel {
        RewardModel::Linear { noise_sd: 0.5f64.sqrt() }
    }
}

/// One repetition of the MovieLens bandit.
pub struct MovieLensEnv {
    config: MovieLensConfig,
    factors: Arc<Factors>,
    theta: Vec<f64>,
    stream: StreamRng,
    arms: ArmSet,
}

impl MovieLensEnv {
    /// Draws `theta*` from `stream`, which then draws each round's movies.
    pub fn new(config: MovieLensConfig, factors: Arc<Factors>, mut stream: StreamRng) -> Result<Self, String> {
        let rank = factors.rank;
        if config.n_theta_users > factors.n_users() || config.n_arms > factors.n_movies() {
            return Err(format!(
                "{} users and {} arms requested, the data has {} users and {} movies",
                config.n_theta_users,
                config.n_arms,
                factors.n_users(),
                factors.n_movies()
            ));
        }
        let mut theta = vec![0.0; rank];
        for i in index::sample(&mut stream, factors.n_users(), config.n_theta_users).into_iter() {
            theta.iter_mut().zip(factors.user(i)).for_each(|(t, u)| *t += u);
        }
        let n = norm(&theta);
        if n == 0.0 {
            return Err("the sampled users' mean factor is zero".into());
        }
        theta.iter_mut().for_each(|t| *t /= n);
        Ok(MovieLensEnv { arms: ArmSet::new(rank, config.n_arms, config.rewards), config, factors, theta, stream })
    }

    pub fn theta(&self) -> &[f64] {
        &self.theta
    }
}

impl Environment for MovieLensEnv {
    fn dim(&self) -> usize {
        self.factors.rank
    }

    fn horizon(&self) -> usize {
        self.config.horizon
    }

    fn next_round(&mut self) -> ArrayView2<'_, f64> {
        let rank = self.factors.rank;
        let movies = index::sample(&mut self.stream, self.factors.n_movies(), self.config.n_arms);
        let largest = movies.iter().map(|j| norm(self.factors.movie(j))).fold(0.0, f64::max);
        let scale = if largest > 0.0 { 1.0 / largest } else { 1.0 };
        let features = self.arms.features_mut();
        for (a, j) in movies.iter().enumerate() {
            let x = &mut features[a * rank..][..rank];
            x.iter_mut().zip(self.factors.movie(j)).for_each(|(x, m)| *x = m * scale);
        }
        self.arms.score_glm(&self.theta);
        self.arms.contexts()
    }

    fn arms(&self) -> &ArmSet {
        &self.arms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The authors' format (header, index column, values), read row-major without the index;
    /// every malformed table is refused with its row named.
    #[test]
    fn factor_tables_parse_and_name_bad_rows() {
        let text = ",0,1,2\n0,0.5,-1.25,3e-2\n1,2,0,-0.75\n";
        assert_eq!(parse_factor_csv(text, 2, 3).unwrap(), vec![0.5, -1.25, 0.03, 2.0, 0.0, -0.75]);
        assert_eq!(parse_factor_csv(text, 3, 3).unwrap_err(), "2 rows, expected 3");
        assert!(parse_factor_csv(",0,1\n0,1,2,3\n", 1, 2).unwrap_err().starts_with("row 1 has 4 cells"));
        assert!(parse_factor_csv(",0,1\n0,1,2\n1,x,2\n", 2, 2).unwrap_err().starts_with("row 2: \"x\""));
        assert!(parse_factor_csv(",0,1\n0,1,NaN\n", 1, 2).unwrap_err().contains("not finite"));
        assert_eq!(parse_factor_csv("", 1, 2).unwrap_err(), "the file is empty");
        // A missing directory says where the files go and where they come from.
        let err = read_cdt_authors_factors(Path::new("/nonexistent/armada-data/cdt-authors")).unwrap_err();
        assert!(err.contains("CDT_exp/data/") && err.contains("/nonexistent/armada-data/cdt-authors"), "{err}");
    }

    #[test]
    fn parse_reads_both_formats_and_names_bad_lines() {
        let inter = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n196\t242\t3\t881250949\n22\t377\t1\t878887116\n196\t377\t5\t1\n";
        let r = Ratings::parse(inter).unwrap();
        assert_eq!((r.n_users, r.n_movies), (2, 2));
        // Users 22 -> 0, 196 -> 1; movies 242 -> 0, 377 -> 1.
        assert_eq!(r.entries[0], Rating { user: 1, movie: 0, value: 3.0 });
        assert_eq!(r.entries[1], Rating { user: 0, movie: 1, value: 1.0 });
        assert_eq!(r.entries[2], Rating { user: 1, movie: 1, value: 5.0 });
        let udata = "196\t242\t3\t881250949\n";
        assert_eq!(Ratings::parse(udata).unwrap().entries.len(), 1);
        let err = Ratings::parse("1\t2\n").unwrap_err();
        assert!(err.starts_with("line 1:"), "{err}");
        let err = Ratings::parse("1\t2\t3\n4\tx\t5\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(r.check_shape().unwrap_err().contains("2 users, 2 movies, 3 ratings"));
    }

    #[test]
    fn standin_has_movielens_shape() {
        let r = Ratings::standin(0);
        r.check_shape().unwrap();
        assert!(r.entries.iter().all(|e| (1.0..=5.0).contains(&e.value) && e.value.fract() == 0.0));
        let mut per_user = vec![0; N_USERS];
        let mut pairs = std::collections::HashSet::new();
        for e in &r.entries {
            per_user[e.user as usize] += 1;
            assert!(pairs.insert((e.user, e.movie)), "a user rates a movie once");
        }
        assert!(per_user.iter().all(|&n| n >= 20));
        let mean = r.entries.iter().map(|e| e.value).sum::<f64>() / N_RATINGS as f64;
        assert!((3.0..4.0).contains(&mean), "mean rating {mean}");
        assert_eq!(Ratings::standin(0), r);
    }

    /// Each ALS half-sweep is the exact minimiser of its block: the objective never increases, and
    /// at the end the users' normal equations hold, `(M_u^T M_u + lambda I) u = M_u^T r_u`.
    #[test]
    fn als_descends_and_satisfies_the_normal_equations() {
        let ratings = Ratings::standin(3);
        let mut last = f64::INFINITY;
        for sweeps in 1..=4 {
            let objective = factorize(&ratings, RANK, LAMBDA, sweeps).objective(&ratings, LAMBDA);
            assert!(objective <= last * (1.0 + 1e-12), "sweep {sweeps}: {objective} > {last}");
            last = objective;
        }
        let f = factorize(&ratings, RANK, LAMBDA, 4);
        // After the final movie solve, the movies' normal equations hold exactly.
        let (_, by_movie) = group(&ratings);
        for j in [0, 17, 1681] {
            let m = f.movie(j);
            let mut residual = m.iter().map(|v| LAMBDA * v).collect::<Vec<f64>>();
            for &(i, r) in &by_movie[j] {
                let u = f.user(i);
                let err = dot(u, m) - r;
                residual.iter_mut().zip(u).for_each(|(res, x)| *res += err * x);
            }
            assert!(norm(&residual) < 1e-8, "movie {j}: gradient norm {}", norm(&residual));
        }
        // Rank 20 fits ratings from a rank-5 model closely (RMSE well below the rating std of ~1).
        let rmse = (f.objective(&ratings, 0.0) / N_RATINGS as f64).sqrt();
        assert!(rmse < 0.6, "rmse {rmse}");
    }

    #[test]
    fn environment_follows_the_paper_normalisation() {
        let f = factors(&RatingsSource::StandIn(1)).unwrap();
        assert!(Arc::ptr_eq(&f, &factors(&RatingsSource::StandIn(1)).unwrap()), "computed once");
        let config = MovieLensConfig::paper(MovieLensConfig::paper_linear_noise());
        let mut env = MovieLensEnv::new(config, f.clone(), StreamRng::seed_from_u64(2)).unwrap();
        assert!((norm(env.theta()) - 1.0).abs() < 1e-12);
        for _ in 0..5 {
            let ctx = env.next_round();
            assert_eq!(ctx.dim(), (300, RANK));
            let norms: Vec<f64> = ctx.rows().into_iter().map(|x| norm(x.as_slice().unwrap())).collect();
            let largest = norms.iter().cloned().fold(0.0, f64::max);
            assert!((largest - 1.0).abs() < 1e-12, "the largest of the round has norm 1");
            // Each feature is a movie's factor scaled by 1/largest: find it among the movies.
            let x = ctx.row(0);
            let x = x.as_slice().unwrap();
            let hit = (0..N_MOVIES).any(|j| {
                let m = f.movie(j);
                let s = norm(m) / norm(x);
                x.iter().zip(m).all(|(a, b)| (a * s - b).abs() < 1e-9)
            });
            assert!(hit);
            let best = (0..300).map(|a| env.expected_reward(a)).fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(best, env.best_expected_reward());
            assert!(
                (env.expected_reward(3) - dot(env.contexts().row(3).as_slice().unwrap(), env.theta())).abs() < 1e-15
            );
        }
        let mut other = MovieLensEnv::new(config, f, StreamRng::seed_from_u64(2)).unwrap();
        let mut again =
            MovieLensEnv::new(config, factors(&RatingsSource::StandIn(1)).unwrap(), StreamRng::seed_from_u64(2))
                .unwrap();
        assert_eq!(other.next_round().row(5), again.next_round().row(5));
    }

    #[test]
    fn missing_data_says_how_to_get_it() {
        let err = read_movielens(Path::new("/nonexistent/ml-100k.inter")).unwrap_err();
        assert!(err.contains("analysis/fetch_movielens.py") && err.contains("ARMADA_MOVIELENS"), "{err}");
    }
}
