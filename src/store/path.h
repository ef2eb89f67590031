/* path.h (private) — paths as text: a name joined to a directory and
 * normalised, a path's directory. The config resolves its paths with
 * them, the trainer names its output files. */
#ifndef FUSENET_STORE_PATH_H
#define FUSENET_STORE_PATH_H

/* "dir/name" unless name is absolute, normalised; malloc'ed, NULL when out
 * of memory. */
char *fn_path_join(const char *dir, const char *name);

/* The directory of path ("." for a bare name, "/" for one at the root);
 * malloc'ed, NULL when out of memory. */
char *fn_path_dir(const char *path);

#endif
