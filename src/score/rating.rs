//! Ratings of players from paired comparisons (what `dealgym eval` prints under its cross-play
//! matrix): a Bradley–Terry model fitted on who got the higher ρ when two players met the same
//! situation, on an Elo-like scale, with bootstrap 95% intervals.
//!
//! **Comparisons.** [`Comparisons`] is fed one observation per (episode, rated seat): a `key`
//! naming the situation — the caller hashes what must be equal for two results to be compared
//! (in `eval`: scenario, group and member, counterpart, role and seat) — the player's name and
//! its ρ. Two observations with the same key by different players are one comparison: the
//! higher ρ wins; ρ within [`TIE_TOLERANCE`] of each other is a tie, half a win to each. A key
//! with k players gives every one of its k(k−1)/2 pairs. Keys are 64-bit hashes: two
//! situations whose keys collide would be compared (a chance of about n²/2⁶⁵ for n keys).
//!
//! **Fit.** Bradley–Terry: P(i beats j) = pᵢ/(pᵢ + pⱼ), fitted by Hunter's (2004) MM iteration
//! pᵢ ← Wᵢ / Σⱼ nᵢⱼ/(pᵢ + pⱼ), with Wᵢ i's wins (ties as halves) and nᵢⱼ the comparisons of i
//! and j. As a prior, every player also has [`PRIOR_TIES`] virtual tie(s) with a reference
//! player of strength 1, so a player who always wins (or always loses) keeps a finite
//! strength (its rating then says "better than everyone it met", by how much only the prior
//! decides, and its interval can be narrow for that reason); players never compared, directly
//! or through others, are put on one scale by the prior alone, and the gap between them means
//! nothing. It weighs like one comparison
//! against hundreds, and shrinks a small eval's ratings a little towards the middle.
//!
//! **Scale.** A rating is 400·log₁₀ pᵢ, shifted so that the rated players' mean is 0: a
//! difference of 400 means 10:1 odds of the higher ρ, as in Elo. A player with no comparison
//! has no rating.
//!
//! **Intervals.** Percentile bootstrap over keys: the keys (sorted, so arrival order does not
//! matter) are resampled with replacement [`RESAMPLES`] times with a ChaCha8 RNG from a fixed
//! seed, the model refitted on each resample's comparisons and recentred, and the 2.5th and
//! 97.5th percentiles of a player's ratings (over the resamples where it has a comparison;
//! linear interpolation, as numpy) are its bounds. Resampling keys rather than single
//! comparisons keeps the comparisons of one situation together. Same observations, same
//! intervals, whatever their order.
//!
//! The collector keeps 24 bytes per observation (key, player index, ρ), not records, so a
//! rating over a large file stays small. Pure: no I/O.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::{LEVEL, RESAMPLES};

/// Two ρ closer than this are a tie: equal deals give equal ρ up to rounding.
pub const TIE_TOLERANCE: f64 = 1e-9;

/// Virtual ties each player has with a reference player of strength 1 (the prior).
pub const PRIOR_TIES: f64 = 1.0;

/// Elo's scale: this many points per factor of 10 in strength.
pub const POINTS_PER_DECADE: f64 = 400.0;

/// The seed of the resampling RNG: fixed, so intervals are reproducible.
const BOOTSTRAP_SEED: u64 = 0xb7ad_1e77_2004_5eed;

/// MM stops when no log-strength moves more than this, or after `MAX_ITERATIONS`.
const CONVERGED: f64 = 1e-10;
const MAX_ITERATIONS: usize = 10_000;

/// One player's rating.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rating {
    pub player: String,
    /// 400·log₁₀ of the Bradley–Terry strength, the rated players' mean being 0; `None` for a
    /// player with no comparison.
    pub rating: Option<f64>,
    /// The 95% percentile-bootstrap interval of the rating.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Comparisons the player took part in.
    pub comparisons: usize,
    /// Its wins among them, a tie counting half.
    pub wins: f64,
}

/// Observations to rate from, added one at a time (see the module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparisons {
    names: Vec<String>,
    index: BTreeMap<String, u32>,
    observations: Vec<(u64, u32, f64)>,
}

/// One comparison: players `a` and `b` (indices), and `a`'s share of the win (1, ½ or 0).
type Game = (usize, usize, f64);

impl Comparisons {
    /// Add `player`'s ρ in the situation `key`.
    pub fn add(&mut self, key: u64, player: &str, rho: f64) {
        let next = self.names.len() as u32;
        let index = *self.index.entry(player.to_string()).or_insert(next);
        if index == next {
            self.names.push(player.to_string());
        }
        self.observations.push((key, index, rho));
    }

    /// Observations added.
    pub fn len(&self) -> usize {
        self.observations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    /// The ratings of the players `rated` keeps (their observations alone are compared), sorted
    /// by rating, highest first (players with none last, by name).
    pub fn ratings(&self, rated: impl Fn(&str) -> bool) -> Vec<Rating> {
        self.rate(rated, PRIOR_TIES, RESAMPLES)
    }

    fn rate(&self, rated: impl Fn(&str) -> bool, prior: f64, resamples: usize) -> Vec<Rating> {
        // Players in name order, so the fit does not depend on arrival order.
        let players: Vec<&String> = self.index.keys().filter(|n| rated(n)).collect();
        let position: BTreeMap<u32, usize> = players
            .iter()
            .enumerate()
            .map(|(i, name)| (self.index[*name], i))
            .collect();
        let mut observations: Vec<(u64, usize, f64)> = self
            .observations
            .iter()
            .filter_map(|(key, p, rho)| position.get(p).map(|i| (*key, *i, *rho)))
            .collect();
        observations.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.total_cmp(&b.2)));
        let situations = games_per_key(&observations);
        let n = players.len();

        let full = Tally::of(n, situations.iter().flatten());
        let strengths = fit(&full, prior, None);
        let point = centred(&full, &strengths);

        let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); n];
        if !situations.is_empty() {
            let mut rng = ChaCha8Rng::seed_from_u64(BOOTSTRAP_SEED);
            for _ in 0..resamples {
                let drawn = (0..situations.len())
                    .map(|_| &situations[rng.random_range(0..situations.len())]);
                let tally = Tally::of(n, drawn.flatten());
                let ratings = centred(&tally, &fit(&tally, prior, Some(&strengths)));
                for (i, r) in ratings.into_iter().enumerate() {
                    if let Some(r) = r {
                        draws[i].push(r);
                    }
                }
            }
        }
        let tail = (1.0 - LEVEL) / 2.0;
        let mut out: Vec<Rating> = players
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut d = std::mem::take(&mut draws[i]);
                d.sort_by(f64::total_cmp);
                Rating {
                    player: name.to_string(),
                    rating: point[i],
                    low: point[i].and(quantile(&d, tail)),
                    high: point[i].and(quantile(&d, 1.0 - tail)),
                    comparisons: full.played[i],
                    wins: full.won[i],
                }
            })
            .collect();
        out.sort_by(|a, b| match (a.rating, b.rating) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.player.cmp(&b.player),
        });
        out
    }
}

/// The comparisons of each key, keys in order: every pair of different players under a key.
fn games_per_key(sorted: &[(u64, usize, f64)]) -> Vec<Vec<Game>> {
    sorted
        .chunk_by(|a, b| a.0 == b.0)
        .map(|same_key| {
            let mut games = Vec::new();
            for (x, a) in same_key.iter().enumerate() {
                for b in &same_key[x + 1..] {
                    if a.1 == b.1 {
                        continue;
                    }
                    games.push((a.1, b.1, share(a.2, b.2)));
                }
            }
            games
        })
        .filter(|games: &Vec<Game>| !games.is_empty())
        .collect()
}

/// The share of the win of the player with ρ `a` over the one with ρ `b`.
fn share(a: f64, b: f64) -> f64 {
    if (a - b).abs() <= TIE_TOLERANCE {
        0.5
    } else if a > b {
        1.0
    } else {
        0.0
    }
}

/// Comparisons summed per pair of players.
struct Tally {
    n: usize,
    /// `met[i·n + j]`: comparisons of i and j.
    met: Vec<f64>,
    /// Wins (ties as halves) and comparisons per player.
    won: Vec<f64>,
    played: Vec<usize>,
}

impl Tally {
    fn of<'a>(n: usize, games: impl Iterator<Item = &'a Game>) -> Tally {
        let mut t = Tally {
            n,
            met: vec![0.0; n * n],
            won: vec![0.0; n],
            played: vec![0; n],
        };
        for &(a, b, share) in games {
            t.met[a * n + b] += 1.0;
            t.met[b * n + a] += 1.0;
            t.won[a] += share;
            t.won[b] += 1.0 - share;
            t.played[a] += 1;
            t.played[b] += 1;
        }
        t
    }
}

/// Bradley–Terry strengths by MM (see the module doc), each player with `prior` virtual ties
/// against a reference of strength 1; without a prior the strengths are scaled to a geometric
/// mean of 1 after each step. Players without comparisons keep strength 1 (and get no rating).
fn fit(t: &Tally, prior: f64, start: Option<&[f64]>) -> Vec<f64> {
    let n = t.n;
    let mut p: Vec<f64> = start.map_or_else(|| vec![1.0; n], <[f64]>::to_vec);
    let active: Vec<usize> = (0..n).filter(|i| t.played[*i] > 0).collect();
    for _ in 0..MAX_ITERATIONS {
        let mut next = p.clone();
        for &i in &active {
            let mut denominator = prior / (p[i] + 1.0);
            for j in 0..n {
                let met = t.met[i * n + j];
                if met > 0.0 {
                    denominator += met / (p[i] + p[j]);
                }
            }
            let wins = t.won[i] + prior / 2.0;
            next[i] = (wins / denominator).max(f64::MIN_POSITIVE);
        }
        if prior == 0.0 && !active.is_empty() {
            let mean_log = active.iter().map(|&i| next[i].ln()).sum::<f64>() / active.len() as f64;
            for &i in &active {
                next[i] /= mean_log.exp();
            }
        }
        let moved = active
            .iter()
            .map(|&i| (next[i].ln() - p[i].ln()).abs())
            .fold(0.0, f64::max);
        p = next;
        if moved < CONVERGED {
            break;
        }
    }
    p
}

/// Ratings on the Elo-like scale, the mean over players with comparisons being 0; `None` for
/// the others.
fn centred(t: &Tally, strengths: &[f64]) -> Vec<Option<f64>> {
    let raw: Vec<Option<f64>> = (0..t.n)
        .map(|i| (t.played[i] > 0).then(|| POINTS_PER_DECADE * strengths[i].log10()))
        .collect();
    let rated: Vec<f64> = raw.iter().flatten().copied().collect();
    let mean = rated.iter().sum::<f64>() / rated.len().max(1) as f64;
    raw.into_iter().map(|r| r.map(|r| r - mean)).collect()
}

/// The `q` quantile of sorted draws ([`super::aggregate::percentile`]); `None` for no draws.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| super::aggregate::percentile(sorted, q))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rating<'a>(ratings: &'a [Rating], player: &str) -> &'a Rating {
        ratings.iter().find(|r| r.player == player).unwrap()
    }

    /// A beats B under keys 0, 1, 2 and loses under key 3.
    fn three_to_one() -> Comparisons {
        let mut c = Comparisons::default();
        for (key, a, b) in [(0, 0.8, 0.2), (1, 0.6, 0.5), (2, 0.9, 0.0), (3, 0.1, 0.4)] {
            c.add(key, "A", a);
            c.add(key, "B", b);
        }
        c
    }

    #[test]
    fn three_wins_to_one_is_a_strength_ratio_of_three_without_a_prior() {
        // The BT maximum likelihood: p_A/(p_A + p_B) = 3/4, so p_A/p_B = 3 and the ratings are
        // ±200·log10(3) = ±95.42 around 0.
        let r = three_to_one().rate(|_| true, 0.0, 10);
        let half = 200.0 * 3f64.log10();
        assert!(
            (rating(&r, "A").rating.unwrap() - half).abs() < 1e-6,
            "{r:?}"
        );
        assert!(
            (rating(&r, "B").rating.unwrap() + half).abs() < 1e-6,
            "{r:?}"
        );
        assert_eq!(r[0].player, "A", "highest first");
        assert_eq!((r[0].comparisons, r[0].wins), (4, 3.0));
        assert_eq!((r[1].comparisons, r[1].wins), (4, 1.0));
    }

    #[test]
    fn the_prior_is_one_virtual_tie_with_a_reference_of_strength_one() {
        // With the prior, A's strength x solves 3 + ½ = 4·x/(x + 1/x) + x/(x + 1) (and B's is
        // 1/x by symmetry): x = 1.607120, so A is rated 400·log10(x) = +82.419 and B −82.419.
        let r = three_to_one().ratings(|_| true);
        let a = rating(&r, "A").rating.unwrap();
        assert!((a - 82.419).abs() < 1e-3, "{a}");
        assert!((rating(&r, "B").rating.unwrap() + a).abs() < 1e-9);
        let x = 10f64.powf(a / 400.0);
        let equation = 4.0 * x * x / (x * x + 1.0) + x / (x + 1.0);
        assert!((equation - 3.5).abs() < 1e-8, "{equation}");
    }

    #[test]
    fn a_player_who_always_wins_stays_finite() {
        let mut c = Comparisons::default();
        for key in 0..20 {
            c.add(key, "strong", 1.0);
            c.add(key, "weak", 0.0);
        }
        let r = c.ratings(|_| true);
        let strong = rating(&r, "strong");
        assert!(strong.rating.unwrap().is_finite() && strong.rating.unwrap() > 0.0);
        // Every resample has the same 20:0, so the interval is the point.
        assert!((strong.low.unwrap() - strong.rating.unwrap()).abs() < 1e-6);
        assert!((strong.high.unwrap() - strong.rating.unwrap()).abs() < 1e-6);
    }

    #[test]
    fn three_players_order_transitively() {
        // In every situation A > B > C.
        let mut c = Comparisons::default();
        for key in 0..6 {
            c.add(key, "C", 0.1);
            c.add(key, "A", 0.9);
            c.add(key, "B", 0.5);
        }
        let r = c.ratings(|_| true);
        let order: Vec<&str> = r.iter().map(|x| x.player.as_str()).collect();
        assert_eq!(order, ["A", "B", "C"]);
        let sum: f64 = r.iter().map(|x| x.rating.unwrap()).sum();
        assert!(sum.abs() < 1e-9, "mean 0: {sum}");
        // Each meets both others once per key.
        assert!(r.iter().all(|x| x.comparisons == 12));
        assert_eq!(rating(&r, "A").wins, 12.0);
        assert_eq!(rating(&r, "C").wins, 0.0);
        for x in &r {
            let (low, high, v) = (x.low.unwrap(), x.high.unwrap(), x.rating.unwrap());
            // Equal up to the MM iteration's convergence.
            assert!(low <= v + 1e-6 && v <= high + 1e-6, "{x:?}");
        }
    }

    #[test]
    fn ties_are_half_a_win_each_within_the_tolerance() {
        let mut c = Comparisons::default();
        for key in 0..5 {
            c.add(key, "A", 0.3);
            c.add(key, "B", 0.3 + TIE_TOLERANCE / 2.0);
        }
        let r = c.ratings(|_| true);
        for x in &r {
            assert_eq!((x.comparisons, x.wins), (5, 2.5));
            assert!(x.rating.unwrap().abs() < 1e-9, "{x:?}");
        }
        assert_eq!(share(0.3, 0.3 + 2.0 * TIE_TOLERANCE), 0.0);
    }

    #[test]
    fn a_player_with_no_comparison_has_no_rating() {
        let mut c = three_to_one();
        // Alone under its own key, and under A's key 0 only as a player `rated` leaves out.
        c.add(99, "loner", 0.5);
        c.add(0, "unrated", 1.0);
        let r = c.ratings(|name| name != "unrated");
        assert_eq!(r.len(), 3);
        let loner = rating(&r, "loner");
        assert_eq!(
            (loner.rating, loner.low, loner.comparisons),
            (None, None, 0)
        );
        assert_eq!(r[2].player, "loner", "unrated players last");
        assert_eq!(
            rating(&r, "A").comparisons,
            4,
            "the unrated player is not compared"
        );
        assert!((rating(&r, "A").rating.unwrap() - 82.419).abs() < 1e-3);
        assert!(Comparisons::default().ratings(|_| true).is_empty());
    }

    #[test]
    fn intervals_are_the_same_whatever_the_order_of_the_observations() {
        let mut forward = Comparisons::default();
        let mut backward = Comparisons::default();
        let mut observations = Vec::new();
        for key in 0..30u64 {
            // A mostly beats B, B mostly beats C, with upsets every few keys.
            let rho = |p: u64| ((key * 7 + p * 13) % 10) as f64 / 10.0 + (3 - p) as f64 * 0.1;
            for (p, name) in ["A", "B", "C"].iter().enumerate() {
                observations.push((key, *name, rho(p as u64)));
            }
        }
        for (key, name, rho) in &observations {
            forward.add(*key, name, *rho);
        }
        for (key, name, rho) in observations.iter().rev() {
            backward.add(*key, name, *rho);
        }
        let (f, b) = (forward.ratings(|_| true), backward.ratings(|_| true));
        assert_eq!(f, b);
        for x in &f {
            let (low, high) = (x.low.unwrap(), x.high.unwrap());
            assert!(low < high, "upsets give the interval some width: {x:?}");
            assert!(low <= x.rating.unwrap() && x.rating.unwrap() <= high);
        }
    }
}
