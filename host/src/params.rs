//! The shape every algorithm's parameters share: a `Default` with the paper's values,
//! chainable setters, a check before any work, and `fit` returning an immutable model.

/// Chainable setters `field(self, value) -> Self` for public fields of a parameters
/// type: `setters!(Type { field: Type, … })`.
macro_rules! setters {
    ($ty:ty { $($field:ident : $t:ty),+ $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets `", stringify!($field), "` (chainable).")]
                #[must_use]
                pub fn $field(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )+
        }
    };
}

pub(crate) use setters;
