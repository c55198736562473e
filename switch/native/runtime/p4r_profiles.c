/* Action profiles and selectors: members (an action and its data) and groups (a list of
 * members, repeated by weight), as switch/interp/externs.py's ActionProfile holds them.
 *
 * Included after p4r_externs.c. The Python object stays the control plane (it validates and
 * raises the errors); after every change it pushes the whole profile here
 * (switch/native/mirror_profiles.py), built aside and swapped in under the engine mutex, so
 * a packet sees the profile before or after a change, never half of one. A table entry that
 * points into a profile carries the kind of reference (p4r_entry.ref: 1 a member, 2 a group)
 * and the control-plane id (args[0]); the generated table code resolves it per packet
 * (p4r_prof_pick), so a member's change needs no reload of the tables that use it. */

/* The index of id in ids[0..n) (ascending), or -1. */
static inline int64_t p4r_find_id(const uint64_t *ids, uint32_t n, uint64_t id) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo] == id ? (int64_t)lo : -1;
}

/* The member a member entry names; NULL if the profile has no such member (the table then
 * misses; the control plane never lets an entry name a missing member). */
static inline const p4r_entry *p4r_prof_member(const p4r_profile *p, uint64_t id) {
    int64_t x = p4r_find_id(p->mid, p->nm, id);
    return x < 0 ? NULL : &p->mem[x];
}

/* The group a group entry names: its index, or -1 if it is missing or empty (ActionProfile.
 * resolve: an empty group makes the table miss). */
static inline int64_t p4r_prof_group(const p4r_profile *p, uint64_t id) {
    int64_t g = p4r_find_id(p->gid, p->ng, id);
    return g >= 0 && p->gn[g] ? g : -1;
}

/* Member h % size of group g (BMv2's and the interpreter's choice). */
static inline const p4r_entry *p4r_prof_choose(const p4r_profile *p, int64_t g, uint64_t h) {
    return &p->mem[p->gm[p->gstart[g] + h % p->gn[g]]];
}

static void p4r_prof_release(p4r_profile *p) {
    free(p->mid);
    free(p->mem);
    free(p->gid);
    free(p->gstart);
    free(p->gn);
    free(p->gm);
    memset(p, 0, sizeof *p);
}

static void p4r_profiles_free(p4r_engine *E) {
    for (uint32_t k = 0; k < P4R_NPROF; k++) p4r_prof_release(&E->prof[k]);
}

/* Replace profile k: nm members of (id, action, args[P4R_MAX_ARGS]) with ascending ids, then
 * ng groups of (id, n, n member ids) with ascending ids. Returns 0; -1 when out of memory;
 * -2 for ids out of order or a group naming a missing member (nothing changed). */
int p4r_profile_load(p4r_engine *E, uint32_t k, uint32_t nm, const uint64_t *mflat, uint32_t ng,
                     const uint64_t *gflat) {
    if (k >= P4R_NPROF) return -2;
    p4r_profile p;
    memset(&p, 0, sizeof p);
    uint64_t total = 0;
    const uint64_t *f = gflat;
    for (uint32_t g = 0; g < ng; g++) {
        total += f[1];
        if (total > UINT32_MAX) return -2;
        f += 2 + f[1];
    }
    p.nm = nm;
    p.ng = ng;
    p.mid = malloc((nm ? nm : 1) * sizeof *p.mid);
    p.mem = calloc(nm ? nm : 1, sizeof *p.mem);
    p.gid = malloc((ng ? ng : 1) * sizeof *p.gid);
    p.gstart = malloc((ng ? ng : 1) * sizeof *p.gstart);
    p.gn = malloc((ng ? ng : 1) * sizeof *p.gn);
    p.gm = malloc((total ? total : 1) * sizeof *p.gm);
    if (!p.mid || !p.mem || !p.gid || !p.gstart || !p.gn || !p.gm) {
        p4r_prof_release(&p);
        return -1;
    }
    f = mflat;
    for (uint32_t x = 0; x < nm; x++) {
        p.mid[x] = *f++;
        if (x && p.mid[x] <= p.mid[x - 1]) {
            p4r_prof_release(&p);
            return -2;
        }
        p.mem[x].action = (uint32_t)*f++;
        p.mem[x].hit = 1;
        for (uint32_t i = 0; i < P4R_MAX_ARGS; i++) p.mem[x].args[i] = *f++;
    }
    f = gflat;
    uint32_t at = 0;
    for (uint32_t g = 0; g < ng; g++) {
        p.gid[g] = f[0];
        p.gn[g] = (uint32_t)f[1];
        p.gstart[g] = at;
        if (g && p.gid[g] <= p.gid[g - 1]) {
            p4r_prof_release(&p);
            return -2;
        }
        for (uint32_t j = 0; j < p.gn[g]; j++) {
            int64_t x = p4r_find_id(p.mid, nm, f[2 + j]);
            if (x < 0) {
                p4r_prof_release(&p);
                return -2;
            }
            p.gm[at++] = (uint32_t)x;
        }
        f += 2 + p.gn[g];
    }
    pthread_mutex_lock(&E->mu);
    p4r_profile old = E->prof[k];
    E->prof[k] = p;
    pthread_mutex_unlock(&E->mu);
    p4r_prof_release(&old);
    return 0;
}
