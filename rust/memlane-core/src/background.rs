//! Work that yields to the rest of the process. An index run that embeds parses and indexes
//! keywords while its embedder's feed prepares the model's next batches; on a machine whose
//! cores they share, the keyword pass (several threads) would take them from the feed (one
//! thread, mostly) and the model would wait. So the keyword pass's threads (the pool that reads
//! files, tantivy's indexing, merging and compressing threads) run at the lowest OS priority:
//! with idle cores they run as fast as before, as a priority only counts when threads contend.
//! It also keeps a background index run from slowing the user's own work.
//!
//! On Linux a thread's priority (its nice value) is its own and is copied to the threads it
//! creates: [`at_low_priority`] runs the code that creates them on a thread whose priority is
//! lowered first. Elsewhere the work runs at the usual priority.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::OnceLock;

/// `f()`, run on a thread of the lowest priority: the threads `f` creates have it too.
pub(crate) fn at_low_priority<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            // Best effort: where the priority cannot be lowered, the work runs as before.
            #[cfg(target_os = "linux")]
            let _ =
                thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min);
            f()
        });
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The pool files are read on for the index, at the lowest priority (a thread a core, as
/// rayon's own pool); `None` if it could not be started (the caller uses rayon's own).
pub(crate) fn reading_pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        at_low_priority(|| {
            ThreadPoolBuilder::new()
                .thread_name(|i| format!("memlane-read-{i}"))
                .build()
                .ok()
        })
    })
    .as_ref()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's nice value, the 19th field of its `stat` (after the name in parentheses).
    fn nice_of_this_thread() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        after_name
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn threads_created_at_low_priority_inherit_it() {
        let normal = nice_of_this_thread();
        let (inside, child) = at_low_priority(|| {
            let child = std::thread::spawn(nice_of_this_thread).join().unwrap();
            (nice_of_this_thread(), child)
        });
        assert!(inside > normal, "nice {inside} is not above {normal}");
        assert_eq!(child, inside);
        let pooled = reading_pool().unwrap().install(nice_of_this_thread);
        assert_eq!(pooled, inside);
        assert_eq!(
            nice_of_this_thread(),
            normal,
            "the caller keeps its priority"
        );
    }
}
