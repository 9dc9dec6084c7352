//! Work spread over every core, with results in input order.
//!
//! Rendering frames is the one step of an archive that is pure and
//! independent per item; [`map_in_order`] splits the items into one
//! contiguous run per thread, so the output is exactly what a loop over
//! the items would give (the same values, the same order, the first error
//! in item order).

use std::num::NonZero;

/// How many threads [`map_in_order`] uses for `items` items: every core
/// the process may run on, never more than there are items.
pub(crate) fn threads_for(items: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZero::get);
    cores.min(items).max(1)
}

/// `items.iter().map(f).collect()`, run on `threads` threads.
///
/// Each thread maps one contiguous run of the items, and the runs are
/// joined in order. When some items fail, the error of the first failing
/// item is returned, as the sequential loop would return it.
pub(crate) fn map_in_order<T, R, E, F>(items: &[T], threads: usize, f: F) -> Result<Vec<R>, E>
where
    T: Sync,
    R: Send,
    E: Send,
    F: Fn(&T) -> Result<R, E> + Sync,
{
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    let run = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(run)
            .map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Result<Vec<R>, E>>()))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for handle in handles {
            match handle.join() {
                Ok(part) => out.extend(part?),
                // A panic in `f` is a bug; let it surface as it would have
                // in the loop.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_input_order_at_every_thread_count() {
        let items: Vec<u32> = (0..37).collect();
        let sequential: Vec<u32> = items.iter().map(|i| i * i).collect();
        for threads in [1, 2, 3, 4, 8, 37, 100] {
            let got = map_in_order(&items, threads, |i| Ok::<_, ()>(i * i)).unwrap();
            assert_eq!(got, sequential, "{threads} threads");
        }
    }

    #[test]
    fn the_first_failing_item_gives_the_error() {
        let items: Vec<u32> = (0..20).collect();
        for threads in [1, 2, 3, 7] {
            let got = map_in_order(&items, threads, |&i| {
                if i == 6 || i == 15 { Err(i) } else { Ok(i) }
            });
            assert_eq!(got, Err(6), "{threads} threads");
        }
    }

    #[test]
    fn no_items_give_no_results() {
        let items: Vec<u32> = Vec::new();
        let got = map_in_order(&items, 4, |&i| Ok::<_, ()>(i)).unwrap();
        assert!(got.is_empty());
        assert_eq!(threads_for(0), 1);
        assert!(threads_for(3) <= 3);
    }
}
