/* schedule_kind.c — the registry of learning-rate schedules
 * (schedule_kind.h): the one table that lists them and lookup by name. A
 * new schedule adds its line to the table. */
#include "core/name_list.h"
#include "fusenet/schedule_kind.h"

extern const fn_schedule_kind fn_constant_schedule; /* constant_schedule.c */
extern const fn_schedule_kind fn_step_schedule;     /* step_schedule.c */
extern const fn_schedule_kind fn_cosine_schedule;   /* cosine_schedule.c */
extern const fn_schedule_kind fn_plateau_schedule;  /* plateau_schedule.c */

static const fn_schedule_kind *const kinds[] = {
    &fn_constant_schedule,
    &fn_step_schedule,
    &fn_cosine_schedule,
    &fn_plateau_schedule,
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

int fn_schedule_kind_count(void) { return N_KINDS; }

const fn_schedule_kind *fn_schedule_kind_at(int i)
{
    return i >= 0 && i < N_KINDS ? kinds[i] : NULL;
}

fn_status fn_schedule_kind_find(const char *name, const fn_schedule_kind **kind)
{
    const char *names[N_KINDS];
    for (int i = 0; i < N_KINDS; i++)
        names[i] = kinds[i]->name;
    int at = 0;
    FN_TRY(fn_name_lookup(name, names, N_KINDS, &at));
    *kind = kinds[at];
    return FN_OK;
}

const fn_option *fn_schedule_option(const fn_schedule_kind *kind, const char *name)
{
    return kind ? fn_option_find(kind->options, kind->n_options, name) : NULL;
}
