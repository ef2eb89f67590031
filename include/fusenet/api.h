/* api.h — FN_API, the mark of the public API: every function and object
 * a public header of include/fusenet/ declares carries it, and the shared
 * library exports those alone (it is built with -fvisibility=hidden, so
 * whatever src/ declares stays inside it). */
#ifndef FUSENET_API_H
#define FUSENET_API_H

#if defined(__GNUC__) || defined(__clang__)
#define FN_API __attribute__((visibility("default")))
#else
#define FN_API
#endif

#endif
