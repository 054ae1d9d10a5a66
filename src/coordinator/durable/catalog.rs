//! The families a coordinator knows: those built into it and those declared to it since
//! (by a worker at Register, or by a client ahead of its workers). Readers take the whole
//! as one [`Registry`] snapshot without waiting (sweeps are validated off the scheduler);
//! only the scheduler adds to it, once the store keeps the declaration.

use super::super::state::declared::{self, Checked, DeclaredFamily, MAX_DECLARATIONS, MAX_DECLARATION_BYTES};
use super::super::state::replies::CommandError;
use armada_core::Family;
use armada_core::Registry;
use armada_proto::v1 as pb;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

pub struct Catalog {
    builtin: Registry,
    current: RwLock<Arc<Registry>>,
    /// Every declaration kept, in the order they were declared.
    declared: RwLock<Vec<Kept>>,
    /// The most declarations one token keeps (a declarer that is `unlimited` aside).
    per_token: usize,
    /// Bytes of declarations made `'static` since the process started (a removed one's stay).
    leaked: AtomicUsize,
}

/// A kept declaration, and the label of the token that declared it first.
#[derive(Clone)]
struct Kept {
    family: Arc<DeclaredFamily>,
    owner: String,
}

/// Who declares a family: the label of the call's token, and whether the per-token quota
/// holds it (not for an admin token, nor on a coordinator without tokens).
#[derive(Clone, Debug, PartialEq)]
pub struct Declarer {
    pub token: String,
    pub unlimited: bool,
}

impl Declarer {
    /// A declarer the quota does not hold (tests, and a store's declarations at start-up).
    pub fn unlimited(token: &str) -> Declarer {
        Declarer { token: token.to_string(), unlimited: true }
    }
}

/// Declarations one token keeps at most by default (`armada serve
/// --max-declarations-per-token`).
pub const DEFAULT_DECLARATIONS_PER_TOKEN: usize = 64;

/// The bytes of declarations a process makes `'static` at most: [`MAX_DECLARATIONS`] of the
/// largest. Removing a declaration frees its place, not its memory, so this bounds memory
/// across removals; a restart gives it back.
const MAX_LEAKED_BYTES: usize = MAX_DECLARATIONS * MAX_DECLARATION_BYTES;

/// What to do with a declaration that follows the rules.
pub enum Decision {
    /// The same declaration is kept already: nothing to do.
    Known { digest: String },
    /// The same declaration with other docs or headline metrics: keep it in the store in
    /// place of the kept one (same digest), then [`Catalog::add`] it.
    Restyled(Box<Checked>),
    /// A new one (a new name or version, or a new revision of a version's code): keep it
    /// in the store, then [`Catalog::add`] it.
    New(Box<Checked>),
}

impl Catalog {
    pub fn new(builtin: Registry) -> Catalog {
        let current = RwLock::new(Arc::new(builtin.clone()));
        Catalog {
            builtin,
            current,
            declared: RwLock::new(Vec::new()),
            per_token: DEFAULT_DECLARATIONS_PER_TOKEN,
            leaked: AtomicUsize::new(0),
        }
    }

    /// This catalog, keeping at most `n` declarations of one token.
    pub fn with_quota(mut self, n: usize) -> Catalog {
        self.per_token = n;
        self
    }

    /// Every family known now.
    pub fn get(&self) -> Arc<Registry> {
        self.current.read().expect("catalog lock").clone()
    }

    /// The families built into this coordinator.
    pub fn builtin(&self) -> &Registry {
        &self.builtin
    }

    /// The declaration a reference (`name+digest`) names, if it is a declared one.
    pub fn declared(&self, reference: &str) -> Option<Arc<DeclaredFamily>> {
        let declared = self.declared.read().expect("catalog lock");
        declared.iter().find(|k| k.family.reference() == reference).map(|k| k.family.clone())
    }

    /// The kept declarations of `name` at `version`, by digest (all, or the one of `digest`).
    pub fn revisions(&self, name: &str, version: u32, digest: Option<&str>) -> Vec<String> {
        let declared = self.declared.read().expect("catalog lock");
        let of = |f: &DeclaredFamily| f.name() == name && f.version() == version;
        let digests = declared.iter().filter(|k| of(&k.family)).map(|k| k.family.checked().digest.clone());
        digests.filter(|d| digest.is_none_or(|want| want == d)).collect()
    }

    /// Forget the kept declarations of `name` with these digests (the store forgot them).
    pub fn remove(&self, name: &str, digests: &[String]) {
        let mut declared = self.declared.write().expect("catalog lock");
        let gone = |k: &Kept| k.family.name() == name && digests.contains(&k.family.checked().digest);
        declared.retain(|k| !gone(k));
        let mut current = self.current.write().expect("catalog lock");
        let mut registry = Registry::clone(&current);
        for digest in digests {
            registry = registry.without(&format!("{name}+{digest}"));
        }
        *current = Arc::new(registry);
    }

    /// The label of the token that declared a kept declaration first.
    #[cfg(test)]
    fn owner(&self, reference: &str) -> Option<String> {
        let declared = self.declared.read().expect("catalog lock");
        declared.iter().find(|k| k.family.reference() == reference).map(|k| k.owner.clone())
    }

    /// Check a declaration against the rules (INVALID_ARGUMENT naming the field).
    pub fn check(&self, declaration: pb::FamilyInfo) -> Result<Checked, CommandError> {
        declared::check(declaration, &self.builtin).map_err(|e| CommandError::invalid_argument(e.to_string()))
    }

    /// Compare a checked declaration with those kept under its name and version: the same
    /// digest is known (restyled when its docs changed); another `code` is a new revision;
    /// any other difference is FAILED_PRECONDITION, as is one more when no more can be kept.
    /// A kept declaration made known again becomes the newest of its version.
    pub fn decide(&self, mut checked: Checked, declarer: &Declarer) -> Result<Decision, CommandError> {
        let (name, version) = (&checked.info.name, checked.info.version);
        let revisions: Vec<Arc<DeclaredFamily>> = {
            let declared = self.declared.read().expect("catalog lock");
            let of = |f: &DeclaredFamily| f.name() == name && f.version() == version;
            declared.iter().filter(|k| of(&k.family)).map(|k| k.family.clone()).collect()
        };
        let legacy = declared::legacy_digest(&checked.info);
        let same = revisions.iter().find(|f| {
            let kept = &f.checked().digest;
            *kept == checked.digest || *kept == legacy
        });
        if let Some(same) = same {
            checked.digest = same.checked().digest.clone();
            if same.checked().info == checked.info {
                self.promote(same.clone(), None);
                return Ok(Decision::Known { digest: checked.digest });
            }
            self.check_room(&checked)?;
            return Ok(Decision::Restyled(Box::new(checked)));
        }
        if let Some(newest) = revisions.last() {
            let schema = |info: &pb::FamilyInfo| pb::FamilyInfo { code: String::new(), ..declared::identity(info) };
            let (kept, new) = (schema(&newest.checked().info), schema(&checked.info));
            if kept != new {
                return Err(CommandError::failed_precondition(format!(
                    "family `{name}` version {version} is declared already with digest {}; this declaration \
                     (digest {}) differs at `{}`: give a changed family a new version",
                    newest.checked().digest,
                    checked.digest,
                    declared::first_difference(&kept, &new)
                )));
            }
        }
        let (n_declared, n_own) = {
            let declared = self.declared.read().expect("catalog lock");
            (declared.len(), declared.iter().filter(|k| k.owner == declarer.token).count())
        };
        if n_declared >= MAX_DECLARATIONS {
            return Err(CommandError::failed_precondition(format!(
                "this coordinator keeps {MAX_DECLARATIONS} declared families already, the most it keeps \
                 (`armada family remove` forgets those no sweep uses)"
            )));
        }
        if n_own >= self.per_token && !declarer.unlimited {
            return Err(CommandError::failed_precondition(format!(
                "token `{}` keeps {n_own} declarations already, the most one token keeps \
                 (`armada serve --max-declarations-per-token`; an admin's `armada family remove` forgets \
                 those no sweep uses)",
                declarer.token
            )));
        }
        self.check_room(&checked)?;
        Ok(Decision::New(Box::new(checked)))
    }

    /// Refuse a declaration whose `'static` form would pass what a process makes at most.
    fn check_room(&self, checked: &Checked) -> Result<(), CommandError> {
        use prost::Message;
        let leaked = self.leaked.load(Ordering::Relaxed);
        if leaked + checked.info.encoded_len() > MAX_LEAKED_BYTES {
            return Err(CommandError::failed_precondition(format!(
                "this coordinator has taken {} MiB of declarations since it started, the most it takes \
                 (removed ones included): restart it to take more",
                MAX_LEAKED_BYTES >> 20
            )));
        }
        Ok(())
    }

    /// Add a declaration that [`Self::decide`] found new or restyled (and the store now
    /// keeps, as `owner`'s unless it kept it already): the newest of its version from now on.
    pub fn add(&self, checked: Checked, owner: &str) {
        let kept = {
            let declared = self.declared.read().expect("catalog lock");
            let of = |f: &DeclaredFamily| f.name() == checked.info.name && f.version() == checked.info.version;
            declared.iter().rev().find(|k| of(&k.family)).map(|k| k.family.clone())
        };
        let family = match kept.and_then(|kept| DeclaredFamily::revision_of(&kept, checked.clone())) {
            Some(revision) => revision,
            None => {
                use prost::Message;
                self.leaked.fetch_add(checked.info.encoded_len(), Ordering::Relaxed);
                DeclaredFamily::new(checked, &self.builtin)
            }
        };
        self.promote(Arc::new(family), Some(owner));
    }

    /// Make `family` the last declared of its version (in place of a kept one with its
    /// digest, whose owner it keeps): what a sweep of its name takes when its version is
    /// the newest.
    fn promote(&self, family: Arc<DeclaredFamily>, owner: Option<&str>) {
        let mut declared = self.declared.write().expect("catalog lock");
        let reference = family.reference();
        let before = declared.iter().position(|k| k.family.reference() == reference).map(|i| declared.remove(i));
        let owner = before.map(|k| k.owner).or(owner.map(str::to_string)).unwrap_or_default();
        declared.push(Kept { family: family.clone(), owner });
        let mut current = self.current.write().expect("catalog lock");
        *current = Arc::new(current.with(family));
    }

    /// Load a declaration the store kept (at start-up) under `digest`: it was checked when
    /// it came, and is checked again, since a store may outlive a change of the rules. A
    /// store made before docs were left out of digests keeps the digest of the whole.
    pub fn load(&self, digest: &str, owner: &str, encoded: &[u8]) -> Result<(), String> {
        use prost::Message;
        let info = pb::FamilyInfo::decode(encoded).map_err(|e| format!("undecodable declaration: {e}"))?;
        let name = info.name.clone();
        let mut checked = self.check(info).map_err(|e| format!("declaration of family `{name}`: {}", e.message()))?;
        if digest != checked.digest {
            if digest != declared::legacy_digest(&checked.info) {
                return Err(format!(
                    "declaration of family `{name}`: kept under digest {digest}, but its digest is {}",
                    checked.digest
                ));
            }
            checked.digest = digest.to_string();
        }
        self.add(checked, owner);
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use armada_core::{JobSpec, JobStreams, ParamValue};

    /// A built-in family's description, renamed, is a valid declaration, and the declared
    /// family validates like the built-in one: the same completed spec, a different key.
    #[test]
    fn a_built_in_family_redeclared_validates_its_jobs_the_same_way() {
        let catalog = Catalog::new(crate::registry());
        for family in crate::registry().families() {
            let mut info = declared::family_info(family);
            info.name = format!("my-{}", family.name());
            let Decision::New(checked) = catalog
                .check(info)
                .and_then(|c| catalog.decide(c, &Declarer::unlimited("test")))
                .unwrap_or_else(|e| panic!("{}: {}", family.name(), e.message()))
            else {
                panic!("new")
            };
            catalog.add(*checked, "test");
            let registry = catalog.get();
            let mine = registry.family(&format!("my-{}", family.name())).unwrap();
            assert_eq!(format!("{:?}", mine.benchmarks()), format!("{:?}", family.benchmarks()));
            assert_eq!(format!("{:?}", mine.algorithms()), format!("{:?}", family.algorithms()));
            assert_eq!(mine.metrics(), family.metrics());
            assert_eq!(mine.headline_metrics(), family.headline_metrics());
            assert_eq!(mine.summary_axes(), family.summary_axes());
            let digest = mine.declared_digest().unwrap().to_string();
            assert_eq!(mine.key_salt(), format!("armada-job-v{}+{digest}", family.version()));
            assert_eq!(registry.resolve(&mine.reference()).unwrap().declared_digest(), Some(digest.as_str()));
            let (b, a) = (family.benchmarks()[0].name, family.algorithms()[0].name);
            let mut spec = JobSpec::new(family.name(), b, a);
            spec.horizon = 3;
            let theirs = armada_core::validate_as(family, &spec);
            spec.family = mine.name().to_string();
            let ours = registry.validate(&spec);
            // Cross-field checks are the built-in family's own code: the declared copy
            // accepts what the schema accepts, so compare only where the built-in one did.
            if let Ok(theirs) = theirs {
                let ours = ours.unwrap();
                assert_eq!(ours.spec.benchmark_params, theirs.spec.benchmark_params);
                assert_eq!(ours.spec.algorithm_params, theirs.spec.algorithm_params);
                assert_ne!(ours.key, theirs.key);
                assert_eq!(ours.key, ours.spec.key_salted(&format!("armada-job-v{}+{digest}", family.version())));
            }
        }
        // The build digest is the built-in families' only: declarations do not change it.
        assert_eq!(catalog.get().digest(), crate::registry().digest());
    }

    fn mybo() -> pb::FamilyInfo {
        let mut info = declared::family_info(crate::registry().family("testkit").unwrap());
        info.name = "mybo".into();
        info
    }

    #[test]
    fn the_same_declaration_is_known_and_a_different_one_needs_a_new_version() {
        let catalog = Catalog::new(crate::registry());
        let Decision::New(checked) =
            catalog.check(mybo()).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))).ok().unwrap()
        else {
            panic!("new")
        };
        let digest = checked.digest.clone();
        catalog.add(*checked, "test");
        // Answer-only fields do not count.
        let again = pb::FamilyInfo { declared: true, digest: "x".into(), key_salt: "y".into(), ..mybo() };
        assert!(
            matches!(catalog.check(again).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))), Ok(Decision::Known { digest: d }) if d == digest)
        );
        let mut changed = mybo();
        changed.algorithms[1].params[0].default = Some(armada_proto::wire::param_to_wire(&ParamValue::Int(7)));
        let e =
            catalog.check(changed.clone()).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))).err().unwrap();
        assert_eq!(e.kind(), crate::coordinator::state::replies::ErrorKind::FailedPrecondition);
        assert!(e.message().contains("differs at `algorithms[1].params[0].default`"), "{}", e.message());
        let version = mybo().version;
        assert!(e
            .message()
            .starts_with(&format!("family `mybo` version {version} is declared already with digest {digest}")));
        changed.version = version + 1;
        let Decision::New(checked) =
            catalog.check(changed).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))).ok().unwrap()
        else {
            panic!("new")
        };
        catalog.add(*checked, "test");
        // A sweep takes the newest version; the older stays resolvable by its reference.
        let registry = catalog.get();
        assert_eq!(registry.family("mybo").unwrap().version(), version + 1);
        assert_eq!(registry.resolve(&format!("mybo+{digest}")).unwrap().version(), version);
    }

    fn decide(catalog: &Catalog, info: pb::FamilyInfo) -> Decision {
        catalog
            .check(info)
            .and_then(|c| catalog.decide(c, &Declarer::unlimited("test")))
            .unwrap_or_else(|e| panic!("{}", e.message()))
    }

    /// The code is part of a declaration's identity, its docs are not: another code under
    /// the same name and version is a new revision (new keys), the newest from then on
    /// until another is declared; other docs replace the kept ones under the same digest.
    #[test]
    fn a_new_code_is_a_revision_and_new_docs_restyle_the_kept_declaration() {
        let catalog = Catalog::new(crate::registry());
        let coded = |code: &str| pb::FamilyInfo { code: code.into(), ..mybo() };
        let a = add(&catalog, coded("aaaa"));
        let salt_a = catalog.get().family("mybo").unwrap().key_salt();
        // Docs and headline metrics: the same digest, the same keys, the new docs shown.
        let mut restyled = coded("aaaa");
        restyled.doc = "reworded".into();
        restyled.algorithms[1].doc = "reworded".into();
        restyled.algorithms[1].params[0].doc = "reworded".into();
        restyled.metrics[0].doc = "reworded".into();
        restyled.headline_metrics = vec![restyled.metrics[0].name.clone()];
        let Decision::Restyled(checked) = decide(&catalog, restyled.clone()) else { panic!("restyled") };
        assert_eq!(checked.digest, a);
        catalog.add(*checked, "test");
        let registry = catalog.get();
        let mine = registry.family("mybo").unwrap();
        assert_eq!((mine.doc(), mine.key_salt(), mine.code()), ("reworded", salt_a.clone(), "aaaa"));
        assert_eq!(registry.families().filter(|f| f.name() == "mybo").count(), 1, "in place of the kept one");
        assert!(matches!(decide(&catalog, restyled.clone()), Decision::Known { digest } if digest == a));
        // Another code: a new revision, whose keys differ, now the newest.
        let b = add(&catalog, pb::FamilyInfo { code: "bbbb".into(), ..restyled.clone() });
        assert_ne!(a, b);
        let registry = catalog.get();
        let (newest, old) = (registry.family("mybo").unwrap(), registry.resolve(&format!("mybo+{a}")).unwrap());
        assert_eq!((newest.declared_digest(), newest.code()), (Some(b.as_str()), "bbbb"));
        assert_ne!(newest.key_salt(), salt_a);
        assert!(std::ptr::eq(newest.declaration(), old.declaration()), "a revision shares its 'static form");
        // Another code with another schema is refused: that takes a new version.
        let mut both = pb::FamilyInfo { code: "cccc".into(), ..restyled.clone() };
        both.algorithms[1].params[0].default = Some(armada_proto::wire::param_to_wire(&ParamValue::Int(7)));
        let e = catalog.check(both).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))).err().unwrap();
        assert!(e.message().contains("differs at `algorithms[1].params[0].default`"), "{}", e.message());
        // Declaring the old code again (a worker of it restarted) makes it the newest again.
        assert!(matches!(decide(&catalog, restyled), Decision::Known { digest } if digest == a));
        assert_eq!(catalog.get().family("mybo").unwrap().declared_digest(), Some(a.as_str()));
        assert_eq!(catalog.get().families().filter(|f| f.name() == "mybo").count(), 2);
    }

    /// One token keeps at most its quota of declarations (an unlimited declarer aside); a
    /// declaration it keeps already costs nothing, and a removed one frees its place.
    #[test]
    fn each_token_keeps_at_most_its_quota_of_declarations() {
        let catalog = Catalog::new(crate::registry()).with_quota(2);
        let named = |name: &str| pb::FamilyInfo { name: name.into(), ..mybo() };
        let as_token = |token: &str, info: pb::FamilyInfo| {
            let declarer = Declarer { token: token.into(), unlimited: false };
            let decided = catalog.check(info).and_then(|c| catalog.decide(c, &declarer));
            decided.map(|d| match d {
                Decision::New(checked) | Decision::Restyled(checked) => {
                    let digest = checked.digest.clone();
                    catalog.add(*checked, token);
                    digest
                }
                Decision::Known { digest } => digest,
            })
        };
        let a1 = as_token("a", named("a1")).unwrap();
        as_token("a", named("a2")).unwrap();
        let e = as_token("a", named("a3")).unwrap_err();
        assert_eq!(e.kind(), crate::coordinator::state::replies::ErrorKind::FailedPrecondition);
        assert!(
            e.message().starts_with("token `a` keeps 2 declarations already, the most one token keeps"),
            "{}",
            e.message()
        );
        // Known ones cost nothing, whoever declares them; the owner stays the first.
        assert_eq!(as_token("a", named("a1")).unwrap(), a1);
        assert_eq!(as_token("b", named("a1")).unwrap(), a1);
        assert_eq!(catalog.owner(&format!("a1+{a1}")).as_deref(), Some("a"));
        // Other tokens and unlimited declarers are not held by `a`'s quota.
        as_token("b", named("b1")).unwrap();
        let declarer = Declarer::unlimited("a");
        assert!(matches!(catalog.check(named("a3")).and_then(|c| catalog.decide(c, &declarer)), Ok(Decision::New(_))));
        // A removed declaration frees its place.
        assert_eq!(catalog.revisions("a1", mybo().version, None), vec![a1.clone()]);
        catalog.remove("a1", &[a1]);
        assert!(catalog.get().family("a1").is_err());
        as_token("a", named("a3")).unwrap();
    }

    /// A store made when the digest covered the whole declaration keeps its digests: its
    /// sweeps' jobs keep their keys, and the same declaration declared again is known.
    #[test]
    fn declarations_kept_under_the_whole_declarations_digest_keep_it() {
        use prost::Message;
        let catalog = Catalog::new(crate::registry());
        let info = declared::check(mybo(), &crate::registry()).unwrap().info;
        let legacy = declared::legacy_digest(&info);
        assert_ne!(legacy, declared::digest(&info));
        catalog.load(&legacy, "test", &info.encode_to_vec()).unwrap();
        let registry = catalog.get();
        assert_eq!(registry.family("mybo").unwrap().key_salt(), format!("armada-job-v{}+{legacy}", info.version));
        assert!(matches!(decide(&catalog, info.clone()), Decision::Known { digest } if digest == legacy));
        let e = Catalog::new(crate::registry()).load("0123456789abcdef", "test", &info.encode_to_vec()).unwrap_err();
        assert!(e.contains("kept under digest 0123456789abcdef, but its digest is"), "{e}");
    }

    /// An extension of `extends` declaring `algorithms` (a float parameter `kappa` each).
    pub fn extension(name: &str, extends: &str, algorithms: &[&str]) -> pb::FamilyInfo {
        let kappa = pb::ParamInfo {
            name: "kappa".into(),
            kind: pb::param_info::Kind::Float as i32,
            min: 0.0,
            max: 10.0,
            default: Some(armada_proto::wire::param_to_wire(&ParamValue::Float(2.0))),
            ..Default::default()
        };
        let algorithm = |n: &&str| pb::ComponentInfo {
            name: n.to_string(),
            doc: "mine".into(),
            params: vec![kappa.clone()],
            benchmarks: vec![],
        };
        pb::FamilyInfo {
            name: name.into(),
            version: 1,
            extends: extends.into(),
            algorithms: algorithms.iter().map(algorithm).collect(),
            ..Default::default()
        }
    }

    fn add(catalog: &Catalog, info: pb::FamilyInfo) -> String {
        let checked = catalog
            .check(info)
            .and_then(|c| catalog.decide(c, &Declarer::unlimited("test")))
            .unwrap_or_else(|e| panic!("{}", e.message()));
        let Decision::New(checked) = checked else { panic!("new") };
        let digest = checked.digest.clone();
        catalog.add(*checked, "test");
        digest
    }

    /// An extension's jobs are its family's jobs (the same environment streams), on its
    /// benchmarks and with its metrics and benchmark checks; their keys are salted by the
    /// family's version and the extension's digest; the family's own jobs keep their keys.
    #[test]
    fn an_extension_runs_its_algorithms_on_its_familys_benchmarks() {
        let catalog = Catalog::new(crate::registry());
        let digest = add(&catalog, extension("my-lse", "lse", &["gp-ucb"]));
        let registry = catalog.get();
        let (lse, mine) = (registry.family("lse").unwrap(), registry.family("my-lse").unwrap());
        assert_eq!(mine.extends(), Some("lse"));
        assert_eq!((mine.benchmarks(), mine.metrics()), (lse.benchmarks(), lse.metrics()));
        assert_eq!((mine.headline_metrics(), mine.ends_early()), (lse.headline_metrics(), lse.ends_early()));
        assert_eq!(mine.key_salt(), format!("armada-job-v{}+{digest}", lse.version()));
        let mut spec = JobSpec::new("lse", "himmelblau", "gp-ucb");
        (spec.seed, spec.horizon) = (4, 3);
        let valid = registry.validate(&spec).unwrap();
        assert_eq!(valid.spec.algorithm_params.get("kappa"), Some(&ParamValue::Float(2.0)));
        assert_eq!(valid.key, valid.spec.key_salted(&mine.key_salt()));
        assert_eq!(registry.declaring("lse", "gp-ucb").unwrap().reference(), format!("my-lse+{digest}"));
        let mut straddle = spec.clone();
        straddle.algorithm = "straddle".into();
        let builtin = registry.validate(&straddle).unwrap();
        assert_eq!(builtin, crate::registry().validate(&straddle).unwrap(), "the family's own keys are untouched");
        // Common random numbers: the environment streams are the family's for the seed.
        let (a, b) = (JobStreams::new(&valid.spec), JobStreams::new(&builtin.spec));
        assert!(a.env("noise") == b.env("noise") && a.algo("acquisition") != b.algo("acquisition"));
        // The family's checks of its benchmark apply to the extension's jobs too.
        let mut polished = JobSpec::new("lse", "sphere-5d", "gp-ucb");
        polished.horizon = 3;
        polished.benchmark_params.insert("pool_size".into(), ParamValue::Int(10));
        polished.benchmark_params.insert("polish_top_k".into(), ParamValue::Int(11));
        let e = registry.validate(&polished).unwrap_err();
        assert_eq!(e.to_string(), "benchmark_params.polish_top_k: polish_top_k = 11 exceeds pool_size = 10");
        // An unknown algorithm's message lists the extension's; a spec of another family
        // cannot be validated as the extension's.
        let e = registry.validate(&JobSpec::new("lse", "himmelblau", "nope")).unwrap_err();
        assert!(e.to_string().starts_with("algorithm: unknown algorithm `nope` in family `lse`; allowed: "), "{e}");
        assert!(e.to_string().ends_with(", gp-ucb"), "{e}");
        let e = armada_core::validate_as(mine, &JobSpec::new("safe", "himmelblau", "gp-ucb")).unwrap_err();
        assert_eq!(e.to_string(), "family: `safe` is not family `my-lse` (an extension of `lse`)");
        // Two extensions declaring one name make it ambiguous; other names stay usable.
        add(&catalog, extension("their-lse", "lse", &["gp-ucb", "ei"]));
        let e = catalog.get().validate(&spec).unwrap_err();
        assert_eq!(
            e.to_string(),
            "algorithm: `gp-ucb` is declared by several extensions of family `lse` (my-lse, their-lse); a sweep can \
             name it only while one of them declares it"
        );
        spec.algorithm = "ei".into();
        assert!(catalog.get().validate(&spec).is_ok());
    }

    /// An algorithm that declares the benchmarks it supports is refused with the others,
    /// in a sweep too, naming both fields; the declaration's list is checked, and answers
    /// carry it.
    #[test]
    fn an_algorithm_runs_only_the_benchmarks_it_declares_it_supports() {
        let catalog = Catalog::new(crate::registry());
        let mut info = extension("my-lse", "lse", &["gp-ucb", "anywhere"]);
        info.algorithms[0].benchmarks = vec!["sinusoidal".into(), "himmelblau".into()];
        let refused = |edit: &dyn Fn(&mut pb::FamilyInfo)| {
            let mut bad = info.clone();
            edit(&mut bad);
            catalog.check(bad).err().map(|e| e.message().to_string())
        };
        assert_eq!(
            refused(&|i| i.algorithms[0].benchmarks[1] = "nope".into()).unwrap(),
            format!(
                "algorithms[0].benchmarks[1]: `nope` is not a benchmark of the family; allowed: {}",
                crate::registry()
                    .family("lse")
                    .unwrap()
                    .benchmarks()
                    .iter()
                    .map(|b| b.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        assert_eq!(
            refused(&|i| i.algorithms[0].benchmarks[1] = "sinusoidal".into()).unwrap(),
            "algorithms[0].benchmarks[1]: `sinusoidal` twice"
        );
        add(&catalog, info);
        let registry = catalog.get();
        let spec = |benchmark: &str, algorithm: &str| {
            let mut spec = JobSpec::new("lse", benchmark, algorithm);
            spec.horizon = 3;
            registry.validate(&spec)
        };
        assert!(spec("himmelblau", "gp-ucb").is_ok() && spec("sphere-5d", "anywhere").is_ok());
        assert_eq!(
            spec("sphere-5d", "gp-ucb").unwrap_err().to_string(),
            "algorithm: `gp-ucb` does not run benchmark `sphere-5d`: its declaration supports only sinusoidal, himmelblau"
        );
        let text = "family = \"lse\"\nseeds = 2\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n\
                    [[benchmarks]]\nname = \"sphere-5d\"\n[[algorithms]]\nname = \"straddle\"\n\
                    [[algorithms]]\nname = \"gp-ucb\"\n";
        let e = crate::sweep::parse_sweep(text, "mine", &registry).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "algorithms[1]: with benchmark `sphere-5d` (benchmarks[1]): algorithm: `gp-ucb` does not run"
            ),
            "{e}"
        );
        let described = declared::family_info(registry.family("my-lse").unwrap());
        assert_eq!(described.algorithms[0].benchmarks, ["sinusoidal", "himmelblau"]);
        assert!(described.algorithms[1].benchmarks.is_empty());
    }

    #[test]
    fn an_extension_that_breaks_a_rule_is_refused_naming_the_field() {
        let catalog = Catalog::new(crate::registry());
        let refused = |edit: &dyn Fn(&mut pb::FamilyInfo)| {
            let mut info = extension("my-lse", "lse", &["gp-ucb"]);
            edit(&mut info);
            match catalog.check(info) {
                Err(e) => e.message().to_string(),
                Ok(_) => panic!("accepted"),
            }
        };
        let known: Vec<&str> = crate::registry().families().map(|f| f.name()).collect();
        assert_eq!(
            refused(&|i| i.extends = "nope".into()),
            format!(
                "extends: `nope` is not a built-in family of this coordinator (an extension extends one of: {})",
                known.join(", ")
            )
        );
        let testkit = declared::family_info(crate::registry().family("testkit").unwrap());
        assert_eq!(
            refused(&|i| i.benchmarks = testkit.benchmarks.clone()),
            "benchmarks: an extension of `lse` has its benchmarks; declare none"
        );
        assert_eq!(
            refused(&|i| i.metrics = testkit.metrics.clone()),
            "metrics: an extension of `lse` has its metrics; declare none"
        );
        assert_eq!(refused(&|i| i.ends_early = true), "ends_early: an extension of `lse` ends as its jobs end");
        assert_eq!(
            refused(&|i| i.algorithms[0].name = "straddle".into()),
            "algorithms[0].name: `straddle` is an algorithm of `lse`; name yours otherwise"
        );
        assert_eq!(refused(&|i| i.algorithms.clear()), "algorithms: declare at least one");
        // Kept once; the same name and version declared otherwise is refused at its first
        // difference, the inherited parts aside.
        add(&catalog, extension("my-lse", "lse", &["gp-ucb"]));
        let mut changed = extension("my-lse", "lse", &["gp-ucb"]);
        changed.algorithms[0].params[0].max = 11.0;
        let e = catalog.check(changed).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))).err().unwrap();
        assert!(e.message().contains("differs at `algorithms[0].params[0].max`"), "{}", e.message());
        let mut other = extension("my-lse", "lse", &["gp-ucb"]);
        other.extends = "safe".into();
        let e = catalog.check(other).and_then(|c| catalog.decide(c, &Declarer::unlimited("test"))).err().unwrap();
        assert!(e.message().contains("differs at `extends`"), "{}", e.message());
    }

    #[test]
    fn a_declaration_that_breaks_a_rule_is_refused_naming_the_field() {
        let catalog = Catalog::new(crate::registry());
        let refused = |edit: &dyn Fn(&mut pb::FamilyInfo)| {
            let mut info = mybo();
            edit(&mut info);
            match catalog.check(info) {
                Err(e) => {
                    assert_eq!(e.kind(), crate::coordinator::state::replies::ErrorKind::InvalidArgument);
                    e.message().to_string()
                }
                Ok(_) => panic!("accepted"),
            }
        };
        assert!(refused(&|i| i.name = "lse".into()).starts_with("name: `lse` is a built-in family"));
        assert!(refused(&|i| i.name = "My BO".into()).starts_with("name: `My BO` is not a family name"));
        assert!(refused(&|i| i.name = "a+b".into()).starts_with("name: `a+b` is not a family name"));
        assert_eq!(refused(&|i| i.version = 0), "version: 0 is not a version; versions start at 1");
        assert_eq!(refused(&|i| i.algorithms.clear()), "algorithms: declare at least one");
        assert_eq!(
            refused(&|i| i.metrics[0].name = "step".into()),
            "metrics[0].name: `step` is a trajectory column; name the metric otherwise"
        );
        let dup = refused(&|i| {
            let first = i.benchmarks[0].clone();
            i.benchmarks.push(first)
        });
        assert!(dup.starts_with(&format!("benchmarks[{}].name: `", mybo().benchmarks.len())), "{dup}");
        assert_eq!(
            refused(&|i| i.algorithms[1].params[0].default =
                Some(armada_proto::wire::param_to_wire(&ParamValue::Float(1.0)))),
            "algorithms[1].params[0].default: an INT parameter needs an int default"
        );
        assert!(
            refused(&|i| i.algorithms[1].params[0].min = f64::NAN).starts_with("algorithms[1].params[0].min: [NaN, ")
        );
        assert_eq!(
            refused(&|i| i.algorithms[1].params[0].max = 0.5),
            "algorithms[1].params[0].min: [0, 0.5] is not an integral range within +-2^53"
        );
        assert_eq!(
            refused(&|i| i.headline_metrics = vec!["nope".into()]),
            "headline_metrics[0]: `nope` is not a metric of the family"
        );
        assert!(refused(&|i| i.doc = "x".repeat(5000)).starts_with("doc: 5000 characters"));
        // Nothing refused was kept.
        assert!(catalog.get().family("mybo").is_err());
    }
}
