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
//! or through others (in different [`Group`]s), are put on one scale by the prior alone, and
//! the gap between them means nothing. It weighs like one comparison against hundreds, and
//! shrinks a small eval's ratings a little towards the middle.
//!
//! **Groups: who met a common opponent set.** Two players are *linked* when some situation
//! holds both (in `eval`: they played the same counterpart on the same scenario and setup, in
//! the same role and seat, under the same run seed — they met a common opponent set), and
//! *comparable* when a chain of such links joins them (a and c never met the same opponent,
//! but both met one that b met too). A [`Group`] is a connected component of that graph: the
//! players that are comparable with each other, and the situations that link them. Only
//! within a group does the gap between two ratings mean anything: the likelihood has no term
//! joining two groups, only the prior places them on one scale. Each [`Rating`] says its group,
//! and the ratings come grouped (the largest group first), so that no reader takes two groups
//! for one ranking.
//!
//! **Scale.** A rating is 400·log₁₀ pᵢ, shifted so that the rated players' mean is 0: a
//! difference of 400 means 10:1 odds of the higher ρ, as in Elo. A player with no comparison
//! has no rating.
//!
//! **Intervals.** Percentile **Poisson bootstrap over situations**, as the aggregates' intervals
//! ([`super::Aggregate`]): each key gets, for each of the [`RESAMPLES`] resamples r, a weight
//! w_kr ~ Poisson(1) — how many times resample r draws that situation — from
//! [`Weights::of`]`(key)`, the aggregates' own weight function, so a situation's weights depend
//! on its key alone. Resample r is an n×n table of pairwise wins, Σₖ w_kr · (i's wins over j
//! under key k), filled in the one pass over the situations that also fills the point
//! estimate's table; at the end each table is refitted (from the point estimate's strengths)
//! and recentred, and the 2.5th and 97.5th percentiles of a player's ratings (over the
//! resamples where it has a comparison; linear interpolation, as numpy) are its bounds.
//! Drawing whole situations keeps the comparisons of one situation together. A win is a
//! half-integer and a weight an integer, so every sum is exact: the same observations give
//! the same bits, whatever their order and however the store splits them into parts (tested).
//! The Poisson bootstrap draws n situations only on average; its intervals agree with the
//! classical bootstrap's within Monte-Carlo noise (tested against the binomial interval).
//!
//! **Memory.** Observations wait in an [`SampleStore`] until the ratings are asked for:
//! [`InMemory`] keeps them all (24 bytes each); `eval`'s spill store (`eval/spill.rs`) keeps at
//! most a fixed number and moves the rest to partition files by key, so a rating over a large
//! file stays flat. The store hands the observations back in parts, every observation of a key
//! in the same part, and the rating holds one part at a time, plus the tables: (1 +
//! [`RESAMPLES`]) × n² numbers for n rated players. Pure: the store, not this module, does
//! any I/O.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Weights, LEVEL, RESAMPLES};

/// Two ρ closer than this are a tie: equal deals give equal ρ up to rounding.
pub(crate) const TIE_TOLERANCE: f64 = 1e-9;

/// Virtual ties each player has with a reference player of strength 1 (the prior).
pub(crate) const PRIOR_TIES: f64 = 1.0;

/// Elo's scale: this many points per factor of 10 in strength.
pub(crate) const POINTS_PER_DECADE: f64 = 400.0;

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
    /// The [`Group::number`] of the players it is comparable with (see the module doc);
    /// `None` for a player with no comparison.
    pub group: Option<usize>,
}

/// Players linked by comparisons, directly or through others: a connected component of the
/// comparison graph (see the module doc). Their ratings are one ranking; another group's are
/// another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// 1, 2, …: the group with the most players first (then the most situations, then the
    /// first name).
    pub number: usize,
    /// Its players, by name.
    pub players: Vec<String>,
    /// The situations in which two or more of its players were compared: what links them.
    pub situations: usize,
}

/// The ratings and the groups they fall into.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Leaderboard {
    /// Group by group (group 1 first), highest rating first within a group; players with no
    /// comparison last, by name.
    pub ratings: Vec<Rating>,
    pub groups: Vec<Group>,
}

/// One player's ρ in one situation; `player` is its index in [`Comparisons`]' arrival order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingSample {
    pub key: u64,
    pub player: u32,
    pub rho: f64,
}

/// Where [`Comparisons`] keeps its observations until the ratings are asked for: the seam
/// between the pure rating and whatever storage (memory, files) a caller gives it.
pub trait SampleStore {
    type Error;

    /// Keep one observation.
    fn push(&mut self, observation: RatingSample) -> Result<(), Self::Error>;

    /// Observations kept.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every observation kept, in parts: all observations of one key in the same part, each
    /// part small enough to hold. Can be read more than once.
    fn parts(&self) -> impl Iterator<Item = Result<Vec<RatingSample>, Self::Error>> + '_;
}

/// The store that keeps every observation in memory (24 bytes each), in one part.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InMemory(Vec<RatingSample>);

impl SampleStore for InMemory {
    type Error = std::convert::Infallible;

    fn push(&mut self, observation: RatingSample) -> Result<(), Self::Error> {
        self.0.push(observation);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn parts(&self) -> impl Iterator<Item = Result<Vec<RatingSample>, Self::Error>> + '_ {
        std::iter::once(Ok(self.0.clone()))
    }
}

/// Observations to rate from, added one at a time (see the module doc), kept in a store `S`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparisons<S = InMemory> {
    names: Vec<String>,
    index: BTreeMap<String, u32>,
    store: S,
}

/// One comparison: players `a` and `b` (indices), and `a`'s share of the win (1, ½ or 0).
type Pairing = (usize, usize, f64);

impl<S: SampleStore> Comparisons<S> {
    /// No observations yet; they will wait in `store`.
    pub fn new(store: S) -> Comparisons<S> {
        Comparisons {
            names: Vec::new(),
            index: BTreeMap::new(),
            store,
        }
    }

    /// Add `player`'s ρ in the situation `key`.
    pub fn add(&mut self, key: u64, player: &str, rho: f64) -> Result<(), S::Error> {
        let next = self.names.len() as u32;
        let index = *self.index.entry(player.to_string()).or_insert(next);
        if index == next {
            self.names.push(player.to_string());
        }
        self.store.push(RatingSample {
            key,
            player: index,
            rho,
        })
    }

    /// Observations added.
    pub fn len(&self) -> u64 {
        self.store.len()
    }

    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// The ratings of the players `rated` keeps (their observations alone are compared), in
    /// [`Leaderboard::ratings`]' order. Fails only where the store cannot read its
    /// observations back.
    pub fn ratings(&self, rated: impl Fn(&str) -> bool) -> Result<Vec<Rating>, S::Error> {
        self.leaderboard(rated).map(|l| l.ratings)
    }

    /// The ratings of the players `rated` keeps and the groups of comparable players they
    /// fall into (see the module doc).
    pub fn leaderboard(&self, rated: impl Fn(&str) -> bool) -> Result<Leaderboard, S::Error> {
        self.rate(rated, PRIOR_TIES, RESAMPLES)
    }

    /// The ratings with `prior` virtual ties and the first `resamples` (≤ [`RESAMPLES`]) of
    /// each situation's weights.
    fn rate(
        &self,
        rated: impl Fn(&str) -> bool,
        prior: f64,
        resamples: usize,
    ) -> Result<Leaderboard, S::Error> {
        // Players in name order, so the fit does not depend on arrival order.
        let players: Vec<&String> = self.index.keys().filter(|n| rated(n)).collect();
        let mut position: Vec<Option<usize>> = vec![None; self.names.len()];
        for (i, name) in players.iter().enumerate() {
            position[self.index[*name] as usize] = Some(i);
        }
        let n = players.len();
        let resamples = resamples.min(RESAMPLES);

        // Pairwise wins, `[i·n + j]` = i's wins over j: of all situations, then per resample.
        let mut full = vec![0.0; n * n];
        let mut drawn = vec![0.0; resamples * n * n];
        let mut situations = 0usize;
        let mut links = Links::new(n);
        for part in self.store.parts() {
            let mut part: Vec<(u64, usize, f64)> = part?
                .into_iter()
                .filter_map(|o| position[o.player as usize].map(|i| (o.key, i, o.rho)))
                .collect();
            part.sort_unstable_by_key(|o| o.0);
            for same_key in part.chunk_by(|a, b| a.0 == b.0) {
                let games = games_of(same_key);
                if games.is_empty() {
                    continue;
                }
                situations += 1;
                links.join(same_key.iter().map(|o| o.1));
                add_wins(&mut full, n, &games, 1.0);
                let weights = Weights::of(same_key[0].0);
                for (r, &w) in weights.as_slice()[..resamples].iter().enumerate() {
                    if w > 0.0 {
                        add_wins(&mut drawn[r * n * n..(r + 1) * n * n], n, &games, w);
                    }
                }
            }
        }

        let full = Tally::of(n, &full);
        let strengths = fit(&full, prior, None);
        let point = centred(&full, &strengths);
        let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); n];
        if situations > 0 {
            for table in drawn.chunks_exact(n * n) {
                let tally = Tally::of(n, table);
                let ratings = centred(&tally, &fit(&tally, prior, Some(&strengths)));
                for (i, r) in ratings.into_iter().enumerate() {
                    if let Some(r) = r {
                        draws[i].push(r);
                    }
                }
            }
        }
        let (groups, group_of) = links.groups(&players);
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
                    // Whole comparisons: each adds exactly 1 to `played`.
                    comparisons: full.played[i] as usize,
                    wins: full.won[i],
                    group: group_of[i],
                }
            })
            .collect();
        // Group by group, the unrated (no group) last; within a group highest first.
        out.sort_by(|a, b| {
            let group = |r: &Rating| r.group.unwrap_or(usize::MAX);
            group(a)
                .cmp(&group(b))
                .then_with(|| match (a.rating, b.rating) {
                    (Some(x), Some(y)) => y.total_cmp(&x),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => a.player.cmp(&b.player),
                })
        });
        Ok(Leaderboard {
            ratings: out,
            groups,
        })
    }
}

/// Which players situations have linked (a union–find over player indices), and how many
/// situations each link came from: what [`Group`]s are made of. Grows with the players, not
/// with the situations.
struct Links {
    parent: Vec<usize>,
    /// Situations counted at the first player of each (whose group is the situation's).
    situations: Vec<usize>,
}

impl Links {
    fn new(n: usize) -> Links {
        Links {
            parent: (0..n).collect(),
            situations: vec![0; n],
        }
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// One situation in which `players` (at least two different ones) were compared.
    fn join(&mut self, mut players: impl Iterator<Item = usize>) {
        let Some(first) = players.next() else { return };
        self.situations[first] += 1;
        for other in players {
            let (a, b) = (self.root(first), self.root(other));
            // The smaller index becomes the root: the same groups in any order.
            self.parent[a.max(b)] = a.min(b);
        }
    }

    /// The groups of the players linked at least once, numbered (see [`Group::number`]), and
    /// each player's group number (`None` for a player never compared).
    fn groups(mut self, names: &[&String]) -> (Vec<Group>, Vec<Option<usize>>) {
        let n = self.parent.len();
        let mut members: BTreeMap<usize, (Vec<usize>, usize)> = BTreeMap::new();
        for i in 0..n {
            let root = self.root(i);
            let entry = members.entry(root).or_default();
            entry.0.push(i);
            entry.1 += self.situations[i];
        }
        let mut groups: Vec<(Vec<usize>, usize)> = members
            .into_values()
            .filter(|(_, situations)| *situations > 0)
            .collect();
        // Players are in name order, so a group's first index is its first name.
        groups.sort_by(|a, b| {
            b.0.len()
                .cmp(&a.0.len())
                .then(b.1.cmp(&a.1))
                .then(a.0[0].cmp(&b.0[0]))
        });
        let mut group_of = vec![None; n];
        let groups = groups
            .into_iter()
            .enumerate()
            .map(|(g, (players, situations))| {
                for &i in &players {
                    group_of[i] = Some(g + 1);
                }
                Group {
                    number: g + 1,
                    players: players.iter().map(|&i| names[i].to_string()).collect(),
                    situations,
                }
            })
            .collect();
        (groups, group_of)
    }
}

/// The comparisons under one key: every pair of different players.
fn games_of(same_key: &[(u64, usize, f64)]) -> Vec<Pairing> {
    let mut games = Vec::new();
    for (x, a) in same_key.iter().enumerate() {
        for b in &same_key[x + 1..] {
            if a.1 != b.1 {
                games.push((a.1, b.1, share(a.2, b.2)));
            }
        }
    }
    games
}

/// Add `games`, each drawn `weight` times, to a table of pairwise wins. Shares are halves and
/// weights whole, so the sums are exact whatever the order.
fn add_wins(wins: &mut [f64], n: usize, games: &[Pairing], weight: f64) {
    for &(a, b, share) in games {
        wins[a * n + b] += weight * share;
        wins[b * n + a] += weight * (1.0 - share);
    }
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

/// A table of pairwise wins summed the ways the fit reads it.
struct Tally {
    n: usize,
    /// `met[i·n + j]`: comparisons of i and j (weighted, in a resample).
    met: Vec<f64>,
    /// Wins (ties as halves) and comparisons per player.
    won: Vec<f64>,
    played: Vec<f64>,
}

impl Tally {
    /// From pairwise wins, `wins[i·n + j]` = i's wins over j.
    fn of(n: usize, wins: &[f64]) -> Tally {
        let mut t = Tally {
            n,
            met: vec![0.0; n * n],
            won: vec![0.0; n],
            played: vec![0.0; n],
        };
        for i in 0..n {
            for j in 0..n {
                let met = wins[i * n + j] + wins[j * n + i];
                t.met[i * n + j] = met;
                t.won[i] += wins[i * n + j];
                t.played[i] += met;
            }
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
    let active: Vec<usize> = (0..n).filter(|i| t.played[*i] > 0.0).collect();
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
        .map(|i| (t.played[i] > 0.0).then(|| POINTS_PER_DECADE * strengths[i].log10()))
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

    /// `add` on the in-memory store, which cannot fail.
    fn observe<S: SampleStore<Error = std::convert::Infallible>>(
        c: &mut Comparisons<S>,
        key: u64,
        player: &str,
        rho: f64,
    ) {
        let Ok(()) = c.add(key, player, rho);
    }

    fn rate<S: SampleStore<Error = std::convert::Infallible>>(
        c: &Comparisons<S>,
        rated: impl Fn(&str) -> bool,
        prior: f64,
    ) -> Vec<Rating> {
        let Ok(r) = c.rate(rated, prior, RESAMPLES);
        r.ratings
    }

    fn ratings(c: &Comparisons) -> Vec<Rating> {
        rate(c, |_| true, PRIOR_TIES)
    }

    /// A beats B under keys 0, 1, 2 and loses under key 3.
    fn three_to_one() -> Comparisons {
        let mut c: Comparisons = Comparisons::default();
        for (key, a, b) in [(0, 0.8, 0.2), (1, 0.6, 0.5), (2, 0.9, 0.0), (3, 0.1, 0.4)] {
            observe(&mut c, key, "A", a);
            observe(&mut c, key, "B", b);
        }
        c
    }

    #[test]
    fn three_wins_to_one_is_a_strength_ratio_of_three_without_a_prior() {
        // The BT maximum likelihood: p_A/(p_A + p_B) = 3/4, so p_A/p_B = 3 and the ratings are
        // ±200·log10(3) = ±95.42 around 0.
        let r = rate(&three_to_one(), |_| true, 0.0);
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
        let r = ratings(&three_to_one());
        let a = rating(&r, "A").rating.unwrap();
        assert!((a - 82.419).abs() < 1e-3, "{a}");
        assert!((rating(&r, "B").rating.unwrap() + a).abs() < 1e-9);
        let x = 10f64.powf(a / 400.0);
        let equation = 4.0 * x * x / (x * x + 1.0) + x / (x + 1.0);
        assert!((equation - 3.5).abs() < 1e-8, "{equation}");
    }

    #[test]
    fn a_player_who_always_wins_stays_finite() {
        let mut c: Comparisons = Comparisons::default();
        for key in 0..20 {
            observe(&mut c, key, "strong", 1.0);
            observe(&mut c, key, "weak", 0.0);
        }
        let r = ratings(&c);
        let strong = rating(&r, "strong");
        let (v, low, high) = (
            strong.rating.unwrap(),
            strong.low.unwrap(),
            strong.high.unwrap(),
        );
        assert!(v.is_finite() && v > 0.0);
        // Every resample is k:0 for a Poisson(20) k, so only the prior's weight against k
        // moves the rating: the interval is finite, above 0, and holds the point.
        assert!(
            0.0 < low && low <= v + 1e-6 && v <= high + 1e-6,
            "{strong:?}"
        );
        assert!(high.is_finite());
    }

    #[test]
    fn three_players_order_transitively() {
        // In every situation A > B > C.
        let mut c: Comparisons = Comparisons::default();
        for key in 0..6 {
            observe(&mut c, key, "C", 0.1);
            observe(&mut c, key, "A", 0.9);
            observe(&mut c, key, "B", 0.5);
        }
        let r = ratings(&c);
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
        let mut c: Comparisons = Comparisons::default();
        for key in 0..5 {
            observe(&mut c, key, "A", 0.3);
            observe(&mut c, key, "B", 0.3 + TIE_TOLERANCE / 2.0);
        }
        let r = ratings(&c);
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
        observe(&mut c, 99, "loner", 0.5);
        observe(&mut c, 0, "unrated", 1.0);
        let r = rate(&c, |name| name != "unrated", PRIOR_TIES);
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
        assert!(ratings(&Comparisons::default()).is_empty());
    }

    #[test]
    fn sixty_wins_in_a_hundred_give_the_binomial_interval() {
        // Without a prior, P(A beats B) = 1/(1 + 10^(−(r_A − r_B)/400)) and r_B = −r_A. The
        // textbook interval of a proportion, 0.6 ± 1.96·√(0.6·0.4/100) = [0.504, 0.696], is
        // what the bootstrap should give within its Monte-Carlo noise (about ±0.005 here).
        let mut c: Comparisons = Comparisons::default();
        for key in 0..100u64 {
            observe(&mut c, key, "A", if key % 5 < 3 { 1.0 } else { 0.0 });
            observe(&mut c, key, "B", 0.5);
        }
        let r = rate(&c, |_| true, 0.0);
        let a = rating(&r, "A");
        assert_eq!((a.comparisons, a.wins), (100, 60.0));
        let p = |rating: f64| 1.0 / (1.0 + 10f64.powf(-2.0 * rating / 400.0));
        assert!((p(a.rating.unwrap()) - 0.6).abs() < 1e-9, "{a:?}");
        let se = (0.6f64 * 0.4 / 100.0).sqrt();
        let (low, high) = (p(a.low.unwrap()), p(a.high.unwrap()));
        assert!((low - (0.6 - 1.96 * se)).abs() < 0.02, "{low} {a:?}");
        assert!((high - (0.6 + 1.96 * se)).abs() < 0.02, "{high} {a:?}");
    }

    #[test]
    fn players_fall_into_groups_that_a_bridge_joins() {
        // a and b meet under keys 0..3, c and d under 10..12: two groups that share no
        // situation. e is alone under its own key: no comparison, no group.
        let mut c: Comparisons = Comparisons::default();
        for key in 0..3 {
            observe(&mut c, key, "a", 0.8);
            observe(&mut c, key, "b", 0.2);
        }
        for key in 10..12 {
            observe(&mut c, key, "d", 0.9);
            observe(&mut c, key, "c", 0.1);
        }
        observe(&mut c, 99, "e", 0.5);
        let Ok(apart) = c.leaderboard(|_| true);
        let group = |r: &[Rating], p: &str| rating(r, p).group;
        assert_eq!(
            apart.groups,
            [
                Group {
                    number: 1,
                    players: vec!["a".into(), "b".into()],
                    situations: 3
                },
                Group {
                    number: 2,
                    players: vec!["c".into(), "d".into()],
                    situations: 2
                },
            ]
        );
        let order: Vec<(&str, Option<usize>)> = apart
            .ratings
            .iter()
            .map(|r| (r.player.as_str(), r.group))
            .collect();
        assert_eq!(
            order,
            [
                ("a", Some(1)),
                ("b", Some(1)),
                ("d", Some(2)),
                ("c", Some(2)),
                ("e", None)
            ],
            "group by group, never one scale across groups"
        );

        // One situation holding b and c (the bridge) links all four through it.
        observe(&mut c, 20, "b", 0.6);
        observe(&mut c, 20, "c", 0.4);
        let Ok(joined) = c.leaderboard(|_| true);
        assert_eq!(
            joined.groups,
            [Group {
                number: 1,
                players: vec!["a".into(), "b".into(), "c".into(), "d".into()],
                situations: 6
            }]
        );
        for p in ["a", "b", "c", "d"] {
            assert_eq!(group(&joined.ratings, p), Some(1), "{p}");
        }
        assert_eq!(group(&joined.ratings, "e"), None);
        // a and d never met, yet d is now ranked on a's scale through b and c.
        let r = &joined.ratings;
        assert!(rating(r, "a").rating > rating(r, "b").rating);
        assert!(rating(r, "d").rating > rating(r, "c").rating);
        // Leaving b out of the rating takes the bridge with it.
        let Ok(without_b) = c.leaderboard(|p| p != "b");
        assert_eq!(without_b.groups.len(), 1, "a has no one left to meet");
        assert_eq!(without_b.groups[0].players, ["c", "d"]);
        assert_eq!(group(&without_b.ratings, "a"), None);
    }

    /// A store that hands its observations back in `parts` parts by key, last part first.
    #[derive(Default)]
    struct Parted(Vec<RatingSample>, u64);

    impl SampleStore for Parted {
        type Error = std::convert::Infallible;
        fn push(&mut self, o: RatingSample) -> Result<(), Self::Error> {
            self.0.push(o);
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn parts(&self) -> impl Iterator<Item = Result<Vec<RatingSample>, Self::Error>> + '_ {
            (0..self.1).rev().map(|p| {
                Ok(self
                    .0
                    .iter()
                    .filter(|o| o.key % self.1 == p)
                    .copied()
                    .collect())
            })
        }
    }

    #[test]
    fn the_same_observations_give_the_same_bits_in_any_order_and_any_parts() {
        let mut observations = Vec::new();
        for key in 0..30u64 {
            // A mostly beats B, B mostly beats C, with upsets every few keys and some ties.
            let rho = |p: u64| ((key * 7 + p * 13) % 10) as f64 / 10.0 + (3 - p) as f64 * 0.1;
            for (p, name) in ["A", "B", "C"].iter().enumerate() {
                observations.push((key, *name, rho(p as u64)));
            }
        }
        let mut forward: Comparisons = Comparisons::default();
        for (key, name, rho) in &observations {
            observe(&mut forward, *key, name, *rho);
        }
        let f = ratings(&forward);
        for parts in [1, 4, 7] {
            let mut backward = Comparisons::new(Parted(Vec::new(), parts));
            for (key, name, rho) in observations.iter().rev() {
                observe(&mut backward, *key, name, *rho);
            }
            let b = rate(&backward, |_| true, PRIOR_TIES);
            // Bit for bit: `assert_eq!` on the f64s.
            assert_eq!(f, b, "{parts} parts");
        }
        for x in &f {
            let (low, high) = (x.low.unwrap(), x.high.unwrap());
            assert!(low < high, "upsets give the interval some width: {x:?}");
            assert!(low <= x.rating.unwrap() && x.rating.unwrap() <= high);
        }
    }
}
