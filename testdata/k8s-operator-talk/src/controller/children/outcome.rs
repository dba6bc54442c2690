//! What `Children::ensure` did to a child.

/// What `ensure` did to a child.
#[derive(Debug)]
pub enum Outcome<K> {
    /// The child was in step; nothing was sent.
    Unchanged(K),
    /// The child was missing and has been created.
    Created(K),
    /// The child had drifted and has been set back.
    Corrected(K),
}

impl<K> Outcome<K> {
    /// The child as the API server last answered (or as cached).
    pub fn object(&self) -> &K {
        match self {
            Outcome::Unchanged(obj) | Outcome::Created(obj) | Outcome::Corrected(obj) => obj,
        }
    }

    /// "Created" or "Corrected" when something was written, for events.
    pub fn change(&self) -> Option<&'static str> {
        match self {
            Outcome::Unchanged(_) => None,
            Outcome::Created(_) => Some("Created"),
            Outcome::Corrected(_) => Some("Corrected"),
        }
    }
}
