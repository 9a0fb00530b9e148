//! Work on rayon's pool, results taken in order on the calling thread as they come: how the
//! writer reads files side by side while it adds the ones before them to the index.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Run `work` on each of `items` on rayon's pool and hand its results to `consume` on this
/// thread in the items' order, each as soon as it and all before it are done; stops at the
/// first error `consume` returns (items under way finish, no new one starts).
///
/// Items are taken in order (not split in ranges, as a parallel iterator does), so results
/// come nearly in order and `consume` runs beside the work instead of after all of it.
///
/// # Errors
/// The first error of `consume`.
pub(super) fn map_in_order<T: Sync, R: Send, E>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    mut consume: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    let next = &AtomicUsize::new(0);
    let stop = &AtomicBool::new(false);
    let work = &work;
    rayon::in_place_scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, R)>();
        for _ in 0..rayon::current_num_threads().min(items.len()) {
            let tx = tx.clone();
            scope.spawn(move |_| {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    if tx.send((i, work(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut ready = BTreeMap::new();
        let mut wanted = 0;
        for (i, result) in rx {
            ready.insert(i, result);
            while let Some(result) = ready.remove(&wanted) {
                wanted += 1;
                if let Err(e) = consume(result) {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn results_arrive_in_order_whatever_order_the_work_ends_in() {
        let items: Vec<u64> = (0..200).collect();
        let mut seen = Vec::new();
        map_in_order(
            &items,
            |&i| {
                // Early items take longest, so they end after later ones.
                std::thread::sleep(std::time::Duration::from_micros((200 - i) * 20));
                i * 2
            },
            |r| {
                seen.push(r);
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(seen, items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn an_error_stops_the_work_and_is_returned() {
        let items: Vec<u32> = (0..10_000).collect();
        let started = Mutex::new(0);
        let mut consumed = 0;
        let result = map_in_order(
            &items,
            |&i| {
                *started.lock().unwrap() += 1;
                std::thread::sleep(std::time::Duration::from_micros(50));
                i
            },
            |i| {
                consumed += 1;
                if i == 20 {
                    Err(format!("failed at {i}"))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(result, Err("failed at 20".to_owned()));
        assert_eq!(consumed, 21);
        assert!(*started.lock().unwrap() < items.len());
    }

    #[test]
    fn nothing_to_do_is_done_at_once() {
        let mut calls = 0;
        map_in_order(
            &[] as &[u8],
            |&b| b,
            |_| {
                calls += 1;
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(calls, 0);
    }
}
