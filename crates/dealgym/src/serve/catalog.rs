//! The scenarios a server can play ([`Catalog`], in core: the Python binding picks through it
//! too), and the planned episode of a reset's pick.

use super::hub::Hub;
use crate::game::EpisodeSeed;
use crate::run::PlannedEpisode;
pub use crate::scenario::Catalog;

impl Hub {
    /// The episode a reset plays: the catalog's scenario at `index` with its digest.
    pub(super) fn planned(&self, index: usize, seeds: EpisodeSeed) -> PlannedEpisode {
        PlannedEpisode {
            scenario: self.catalog.scenarios[index].clone(),
            scenario_digest: self.catalog.digest(index),
            seeds,
            prefix: None,
            tag: None,
            standing: None,
            learner_role: None,
        }
    }
}
