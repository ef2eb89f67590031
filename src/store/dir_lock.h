/* dir_lock.h (private) — a run's hold on its output directory: an exclusive
 * flock on the directory itself, taken before any file of the run is
 * opened and held until the run ends, so two runs never write the same
 * checkpoint.h5 or metrics.csv, and the holder knows that a temporary of
 * its files' names (atomic_file.h) of a dead process is a leftover. The kernel drops a flock when its
 * holder dies, so a killed run leaves no stale lock; and nothing is written
 * into the directory for it. The lock makes the directory (and its
 * missing parents) when there is none, and on release removes those it
 * made that are still empty: a run that fails or stops before writing a
 * file leaves nothing behind. A run that does not get the lock removes
 * nothing: what it made may already be the holder's. A lock is taken only
 * on the directory its path still names once the flock is held, so one
 * removed or replaced in between (by a holder's release) is never
 * written by two runs. */
#ifndef FUSENET_SRC_DIR_LOCK_H
#define FUSENET_SRC_DIR_LOCK_H

#include "fusenet/status.h"

typedef struct fn_dir_lock fn_dir_lock; /* opaque */

/* Takes the lock on dir, made first if missing, without waiting. Held by
 * another open of it (another process, or another lock in this one):
 * FN_ERR_IO "<dir> is in use by another train run (pid N)", the pid read
 * from /proc/locks ("pid unknown" where that cannot tell). */
fn_status fn_dir_lock_take(fn_dir_lock **lock, const char *dir);

/* Removes the directories it made that are still empty (the lock still
 * held, and only when the path still names the locked one), then releases
 * it; NULL is fine. */
void fn_dir_lock_release(fn_dir_lock *lock);

#endif
