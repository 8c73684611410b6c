//! Seed 001's mention boosts: direct and indirect (distance-discounted) entity mentions.

use crate::batch::*;
use crate::Result;

/// Seed 001's boosts: `adjusted = similarity + direct × (query entities mentioned)
/// + Σ indirect_boost(indirect, distance, strength)` over mentioned related entities.
#[derive(Debug, Clone, PartialEq)]
pub struct MentionBoostProfile {
    /// `entity_boost_direct`: per mention of a query entity.
    pub direct: f64,
    /// `entity_boost_indirect`: per mention of a related entity, before distance and strength.
    pub indirect: f64,
    /// `use_relationship_strength`: when false, strength counts as 1.0.
    pub use_strength: bool,
}

impl Default for MentionBoostProfile {
    fn default() -> Self {
        Self {
            direct: 0.3,
            indirect: 0.1,
            use_strength: true,
        }
    }
}

impl MentionBoostProfile {
    /// # Errors
    /// `InvalidParameter` unless `direct` and `indirect` are finite and `>= 0`.
    pub fn validate(&self) -> Result<()> {
        check_weight(self.direct, "direct")?;
        check_weight(self.indirect, "indirect")
    }

    /// Boost of one mention of a related entity `distance` hops away (`distance >= 1`), honouring
    /// `use_strength`.
    #[inline]
    pub fn indirect_boost(&self, distance: u32, strength: f64) -> f64 {
        let strength = if self.use_strength { strength } else { 1.0 };
        indirect_boost(self.indirect, distance, strength)
    }
}

/// Seed 001: `indirect * (1.0 / distance) * strength`, in that order. `distance` counts hops
/// and starts at 1 (a distance of 0 divides by zero and gives infinity, as the source would).
#[inline]
pub fn indirect_boost(indirect: f64, distance: u32, strength: f64) -> f64 {
    indirect * (1.0 / f64::from(distance)) * strength
}
