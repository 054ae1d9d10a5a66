//! The families a coordinator knows: those built into it and those declared to it since
//! (by a worker at Register, or by a client ahead of its workers). Readers take the whole
//! as one [`Registry`] snapshot without waiting (sweeps are validated off the scheduler);
//! only the scheduler adds to it, once the store keeps the declaration.

use super::declared::{self, Checked, DeclaredFamily, MAX_DECLARATIONS};
use super::replies::CommandError;
use armada_core::Registry;
use armada_proto::v1 as pb;
use std::sync::{Arc, RwLock};

pub struct Catalog {
    builtin: Registry,
    current: RwLock<Arc<Registry>>,
}

/// What to do with a declaration that follows the rules.
pub enum Decision {
    /// The same declaration is kept already: nothing to do.
    Known { digest: String },
    /// A new one: keep it in the store, then [`Catalog::add`] it.
    New(Box<Checked>),
}

impl Catalog {
    pub fn new(builtin: Registry) -> Catalog {
        let current = RwLock::new(Arc::new(builtin.clone()));
        Catalog { builtin, current }
    }

    /// Every family known now.
    pub fn get(&self) -> Arc<Registry> {
        self.current.read().expect("catalog lock").clone()
    }

    /// The families built into this coordinator.
    pub fn builtin(&self) -> &Registry {
        &self.builtin
    }

    /// Check a declaration against the rules (INVALID_ARGUMENT naming the field).
    pub fn check(&self, declaration: pb::FamilyInfo) -> Result<Checked, CommandError> {
        declared::check(declaration, &self.builtin).map_err(|e| CommandError::invalid_argument(e.to_string()))
    }

    /// Compare a checked declaration with the one kept under its name and version:
    /// FAILED_PRECONDITION for a different declaration there, or when no more can be kept.
    pub fn decide(&self, checked: Checked) -> Result<Decision, CommandError> {
        let current = self.get();
        let (name, version) = (&checked.info.name, checked.info.version);
        let kept = current.families().find(|f| f.name() == name && f.version() == version);
        if let Some(kept) = kept {
            let kept_digest = kept.declared_digest().unwrap_or_default();
            if kept_digest == checked.digest {
                return Ok(Decision::Known { digest: checked.digest });
            }
            let kept_info = declared::family_info(kept);
            let kept_info =
                pb::FamilyInfo { key_salt: String::new(), declared: false, digest: String::new(), ..kept_info };
            return Err(CommandError::failed_precondition(format!(
                "family `{name}` version {version} is declared already with digest {kept_digest}; this declaration \
                 (digest {}) differs at `{}`: give a changed family a new version",
                checked.digest,
                declared::first_difference(&kept_info, &checked.info)
            )));
        }
        let n_declared = current.families().filter(|f| f.declared_digest().is_some()).count();
        if n_declared >= MAX_DECLARATIONS {
            return Err(CommandError::failed_precondition(format!(
                "this coordinator keeps {MAX_DECLARATIONS} declared families already, the most it keeps"
            )));
        }
        Ok(Decision::New(Box::new(checked)))
    }

    /// Add a declaration that [`Self::decide`] found new (and the store now keeps).
    pub fn add(&self, checked: Checked) {
        let family = Arc::new(DeclaredFamily::new(checked));
        let mut current = self.current.write().expect("catalog lock");
        *current = Arc::new(current.with(family));
    }

    /// Load a declaration the store kept (at start-up): it was checked when it came, and is
    /// checked again, since a store may outlive a change of the rules.
    pub fn load(&self, encoded: &[u8]) -> Result<(), String> {
        use prost::Message;
        let info = pb::FamilyInfo::decode(encoded).map_err(|e| format!("undecodable declaration: {e}"))?;
        let name = info.name.clone();
        match self.check(info).and_then(|checked| self.decide(checked)) {
            Ok(Decision::New(checked)) => {
                self.add(*checked);
                Ok(())
            }
            Ok(Decision::Known { .. }) => Ok(()),
            Err(e) => Err(format!("declaration of family `{name}`: {}", e.message())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_core::{JobSpec, ParamValue};

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
                .and_then(|c| catalog.decide(c))
                .unwrap_or_else(|e| panic!("{}: {}", family.name(), e.message()))
            else {
                panic!("new")
            };
            catalog.add(*checked);
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
        let Decision::New(checked) = catalog.check(mybo()).and_then(|c| catalog.decide(c)).ok().unwrap() else {
            panic!("new")
        };
        let digest = checked.digest.clone();
        catalog.add(*checked);
        // Answer-only fields do not count.
        let again = pb::FamilyInfo { declared: true, digest: "x".into(), key_salt: "y".into(), ..mybo() };
        assert!(
            matches!(catalog.check(again).and_then(|c| catalog.decide(c)), Ok(Decision::Known { digest: d }) if d == digest)
        );
        let mut changed = mybo();
        changed.algorithms[1].params[0].default = Some(armada_worker::wire::param_to_wire(&ParamValue::Int(7)));
        let e = catalog.check(changed.clone()).and_then(|c| catalog.decide(c)).err().unwrap();
        assert_eq!(e.kind(), super::super::replies::ErrorKind::FailedPrecondition);
        assert!(e.message().contains("differs at `algorithms[1].params[0].default`"), "{}", e.message());
        let version = mybo().version;
        assert!(e
            .message()
            .starts_with(&format!("family `mybo` version {version} is declared already with digest {digest}")));
        changed.version = version + 1;
        let Decision::New(checked) = catalog.check(changed).and_then(|c| catalog.decide(c)).ok().unwrap() else {
            panic!("new")
        };
        catalog.add(*checked);
        // A sweep takes the newest version; the older stays resolvable by its reference.
        let registry = catalog.get();
        assert_eq!(registry.family("mybo").unwrap().version(), version + 1);
        assert_eq!(registry.resolve(&format!("mybo+{digest}")).unwrap().version(), version);
    }

    #[test]
    fn a_declaration_that_breaks_a_rule_is_refused_naming_the_field() {
        let catalog = Catalog::new(crate::registry());
        let refused = |edit: &dyn Fn(&mut pb::FamilyInfo)| {
            let mut info = mybo();
            edit(&mut info);
            match catalog.check(info) {
                Err(e) => {
                    assert_eq!(e.kind(), super::super::replies::ErrorKind::InvalidArgument);
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
                Some(armada_worker::wire::param_to_wire(&ParamValue::Float(1.0)))),
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
