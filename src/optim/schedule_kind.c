/* schedule_kind.c — the registry of learning-rate schedules
 * (schedule_kind.h): the one table that lists them (count and lookup are
 * the registries' own, core/kind.c). A new schedule adds its line to the
 * table. */
#include "fusenet/schedule_kind.h"
#include "core/option.h"

extern const fn_schedule_kind fn_constant_schedule; /* constant_schedule.c */
extern const fn_schedule_kind fn_step_schedule;     /* step_schedule.c */
extern const fn_schedule_kind fn_cosine_schedule;   /* cosine_schedule.c */
extern const fn_schedule_kind fn_plateau_schedule;  /* plateau_schedule.c */

static const fn_kind *const kinds[] = {
    &fn_constant_schedule.kind,
    &fn_step_schedule.kind,
    &fn_cosine_schedule.kind,
    &fn_plateau_schedule.kind,
};
static const fn_registry registry = {kinds, sizeof kinds / sizeof kinds[0]};

const fn_registry *fn_schedule_kinds(void) { return &registry; }

int fn_schedule_kind_count(void) { return fn_registry_count(&registry); }

const fn_schedule_kind *fn_schedule_kind_at(int i)
{
    return (const fn_schedule_kind *)fn_registry_at(&registry, i);
}

fn_status fn_schedule_kind_find(const char *name, const fn_schedule_kind **kind)
{
    const fn_kind *k = NULL;
    FN_TRY(fn_registry_find(&registry, name, &k));
    *kind = (const fn_schedule_kind *)k;
    return FN_OK;
}
