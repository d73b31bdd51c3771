//! dealgym: two-party negotiations between language models, turned into data.
//!
//! The engine is Gym-style: an [`game::Episode`] takes one raw model completion per step and
//! answers with the next observation, whether the episode ended, and the outcome. Around it:
//! [`protocol`] (the turn grammar), [`scenario`] (the five dataset families and their utilities),
//! [`score`] (outcome metrics), [`reward`] (reward designs) and [`record`] (the episode log).

pub mod agents;
pub mod demo;
pub mod game;
pub mod llm;
pub mod mock;
pub mod protocol;
pub mod record;
pub mod reward;
pub mod run;
pub mod scenario;
pub mod score;
