//! The last index values seen per GPU, for speculative packed calls on devices that drain
//! (candle's default `Device::new_cuda`, src/cuda/indices.rs `drains`).
//!
//! There a call's GPU-resident index tensors can only be read by draining candle's stream:
//! the GPU idles while the host checks the values and launches. A model's layers call the
//! attention of one decode step with the same index values, so after a call whose values
//! equalled those of the call before it, the next call guesses them: it queues the copies of
//! its index tensors, validates and launches on the guessed values (the checked upload of
//! those values is reused, src/packed.rs `uploaded`), and only then waits for the copies,
//! while the GPU runs its kernels. Equal values: the launched result is the answer, and the
//! drain is gone. Different values: it is dropped, and the call validates and runs again on
//! the values read (errors name them as always). Validation never trusts the guess: it runs
//! in full on the guessed values against this call's q, k and v, so the kernels only ever read
//! checked indices within this call's tensors.
//!
//! Policy: guess after a call whose values equalled its predecessor's, and right after a
//! wrong guess (the values just read), but not after two wrong guesses in a row until values
//! repeat again. A decode step of L layers then costs one wrong guess (its first layer's
//! kernel runs twice) against L drains; calls whose values change every time stop guessing
//! after two wrong guesses, and alternate between reading and guessing only when their values
//! repeat.

use std::sync::Mutex;

use candle_core::cuda_backend::DeviceId;
use candle_core::{DType, Tensor};

/// The shape of a call's index tensors: each tensor's dims and dtype, in
/// `Varlen::index_tensors` order, and whether q and k share their cumulative lengths.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Signature {
    tensors: Vec<(Vec<usize>, DType)>,
    shared_seqlens: bool,
}

impl Signature {
    pub(crate) fn new(ts: &[&Tensor], shared_seqlens: bool) -> Self {
        Self { tensors: ts.iter().map(|t| (t.dims().to_vec(), t.dtype())).collect(), shared_seqlens }
    }
}

struct Last {
    device: DeviceId,
    signature: Signature,
    values: Vec<Vec<i64>>,
    policy: Policy,
}

/// One device's guessing state: the policy above.
#[derive(Default, Clone, Copy, Debug)]
struct Policy {
    /// Consecutive calls whose values equalled the kept ones.
    repeats: u32,
    /// Whether the last call guessed wrong (its values read are the kept ones).
    after_miss: bool,
    /// Wrong guesses since values last repeated.
    misses: u32,
}

/// Wrong guesses in a row after which calls read until values repeat.
const MAX_MISSES: u32 = 2;

impl Policy {
    /// Whether the next call guesses the kept values.
    fn guesses(&self) -> bool {
        (self.repeats >= 1 || self.after_miss) && self.misses < MAX_MISSES
    }

    /// A call's values read: `equal` to the kept ones, after a guess or not.
    fn observe(&mut self, equal: bool, guessed: bool) {
        if equal {
            self.repeats = self.repeats.saturating_add(1);
            self.after_miss = false;
            self.misses = 0;
        } else {
            self.repeats = 0;
            self.after_miss = guessed;
            if guessed {
                self.misses = self.misses.saturating_add(1);
            }
        }
    }
}

/// One entry per device, at most [`KEPT`] (the oldest dropped first).
static LAST: Mutex<Vec<Last>> = Mutex::new(Vec::new());
const KEPT: usize = 8;

/// The values to guess for a call of `signature` on `device` (the last call's), if the policy
/// above guesses.
pub(crate) fn guess(device: DeviceId, signature: &Signature) -> Option<Vec<Vec<i64>>> {
    let last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let l = last.iter().find(|l| l.device == device)?;
    (l.signature == *signature && l.policy.guesses()).then(|| l.values.clone())
}

/// Records the values a call on `device` read, and whether it had guessed; returns whether
/// they equal the kept ones (for a guess: whether it was right).
pub(crate) fn observe(device: DeviceId, signature: &Signature, values: &[Vec<i64>], guessed: bool) -> bool {
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = last.iter_mut().find(|l| l.device == device) {
        let equal = l.signature == *signature && l.values == values;
        l.policy.observe(equal, guessed);
        if !equal {
            l.signature = signature.clone();
            l.values = values.to_vec();
        }
        return equal;
    }
    if last.len() >= KEPT {
        last.remove(0);
    }
    last.push(Last { device, signature: signature.clone(), values: values.to_vec(), policy: Policy::default() });
    false
}

#[cfg(test)]
mod tests {
    use super::Policy;

    /// Runs the policy over a sequence of call values; returns (reads, right guesses, wrong
    /// guesses).
    fn run(calls: &[u32]) -> (usize, usize, usize) {
        let (mut policy, mut last, mut counts) = (Policy::default(), None, (0, 0, 0));
        for &x in calls {
            let guessed = last.is_some() && policy.guesses();
            let equal = last == Some(x);
            match (guessed, equal) {
                (false, _) => counts.0 += 1,
                (true, true) => counts.1 += 1,
                (true, false) => counts.2 += 1,
            }
            if last.is_some() {
                policy.observe(equal, guessed);
            }
            last = Some(x);
        }
        counts
    }

    #[test]
    fn decode_steps_cost_one_wrong_guess_each() {
        // 5 decode steps of a 32-layer model: the values change at each step's first layer.
        let calls: Vec<u32> = (0..5).flat_map(|step| std::iter::repeat_n(step, 32)).collect();
        // The first two calls read (no values kept, then no repeat yet); every later step's
        // first layer guesses wrong, every other call guesses right.
        assert_eq!(run(&calls), (2, 160 - 2 - 4, 4));
    }

    #[test]
    fn values_that_change_every_call_stop_guessing() {
        // Alternating values never repeat: no call guesses.
        let alternating: Vec<u32> = (0..100).map(|i| i % 2).collect();
        assert_eq!(run(&alternating), (100, 0, 0));
        // After a run, all-new values: two wrong guesses, then reads.
        let calls: Vec<u32> = [0, 0, 0].into_iter().chain(1..50).collect();
        let (reads, right, wrong) = run(&calls);
        assert_eq!((right, wrong), (1, 2), "reads {reads}");
    }

    #[test]
    fn wrong_guesses_stay_bounded_by_repeats() {
        // Pairs (A A B B C C ...): each pair's first call guesses wrong, its second right; a
        // wrong guess never happens twice without a repeat between.
        let calls: Vec<u32> = (0..50).flat_map(|v| [v, v]).collect();
        let (reads, right, wrong) = run(&calls);
        assert_eq!(reads + right + wrong, 100);
        assert!(wrong <= right + 1, "{wrong} wrong against {right} right");
    }
}
