//! Artefacts: what one stage leaves in the Exchange for a later one (a slot, or the vetted
//! `target`), declared by each stage as `needs` and `gives`. An artefact has a name, for
//! messages, and the type the stage reads or writes, so `paycall check` refuses a chain that
//! hands a stage the wrong thing even when the names agree.
//!
//! The route's reply is not an artefact: a stage that answers sets `ex.reply`, which the
//! finishing stages read and the runner guarantees (docs/decisions.md#artefacts).

use std::any::{Any, TypeId};

#[derive(Clone, Copy)]
pub struct Artefact {
    pub name: &'static str,
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
}

impl Artefact {
    /// The artefact `name`, carried as a `T`.
    pub const fn of<T: Any>(name: &'static str) -> Artefact {
        Artefact {
            name,
            type_id: TypeId::of::<T>,
            type_name: std::any::type_name::<T>,
        }
    }

    pub fn type_name(&self) -> &'static str {
        (self.type_name)()
    }

    /// Same name, same type.
    pub fn is(&self, other: &Artefact) -> bool {
        self.name == other.name && (self.type_id)() == (other.type_id)()
    }
}

impl std::fmt::Debug for Artefact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.type_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artefact_is_its_name_and_its_type() {
        let a = Artefact::of::<u32>("n");
        assert!(a.is(&Artefact::of::<u32>("n")));
        assert!(!a.is(&Artefact::of::<u64>("n")));
        assert!(!a.is(&Artefact::of::<u32>("m")));
        assert_eq!(a.type_name(), "u32");
    }
}
