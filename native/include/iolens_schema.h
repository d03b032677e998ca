/*
 * Field tables for the SCHEMA record, expanded from iolens_format.h.
 * Used by the writer (to embed the schema in every capture) and by the
 * generator of the Python constants module.
 */
#ifndef IOLENS_SCHEMA_H
#define IOLENS_SCHEMA_H

#include <stddef.h>
#include <string.h>
#include "iolens_format.h"

/* The name in place, not a pointer: the tables are then read-only data, not ~120 relocations the loader makes
 * in every process that loads the interposer, on a page of .data.rel.ro it copies to make them. */
struct iolens_field_desc {
    char name[IOLENS_SCHEMA_NAME_LEN];
    uint32_t type, count, offset;
};
struct iolens_layout_desc {
    const char *name;
    uint32_t kind, version, size, nfields;
    const struct iolens_field_desc *fields;
};

#define IOLENS_FS(type, name) {#name, IOLENS_T_##type, 1, (uint32_t)offsetof(IOLENS_CUR, name)},
#define IOLENS_FA(type, name, n) {#name, IOLENS_T_##type, n, (uint32_t)offsetof(IOLENS_CUR, name)},

#define IOLENS_CUR struct iolens_proc
static const struct iolens_field_desc iolens_fields_PROC[] = {IOLENS_LAYOUT_PROC(IOLENS_FS, IOLENS_FA)};
#undef IOLENS_CUR
#define IOLENS_CUR struct iolens_string
static const struct iolens_field_desc iolens_fields_STRING[] = {IOLENS_LAYOUT_STRING(IOLENS_FS, IOLENS_FA)};
#undef IOLENS_CUR
#define IOLENS_CUR struct iolens_file
static const struct iolens_field_desc iolens_fields_FILE[] = {IOLENS_LAYOUT_FILE(IOLENS_FS, IOLENS_FA)};
#undef IOLENS_CUR
#define IOLENS_CUR struct iolens_timeline
static const struct iolens_field_desc iolens_fields_TIMELINE[] = {IOLENS_LAYOUT_TIMELINE(IOLENS_FS, IOLENS_FA)};
#undef IOLENS_CUR
#define IOLENS_CUR struct iolens_child
static const struct iolens_field_desc iolens_fields_CHILD[] = {IOLENS_LAYOUT_CHILD(IOLENS_FS, IOLENS_FA)};
#undef IOLENS_CUR
#define IOLENS_CUR struct iolens_event
static const struct iolens_field_desc iolens_fields_EVENT[] = {IOLENS_LAYOUT_EVENT(IOLENS_FS, IOLENS_FA)};
#undef IOLENS_CUR

static const struct iolens_layout_desc iolens_layouts[] = {
#define IOLENS_X_LAYOUT(name, layout) \
    {#name, IOLENS_KIND_##name, IOLENS_VER_##name, 0, \
     (uint32_t)(sizeof(iolens_fields_##name) / sizeof(iolens_fields_##name[0])), iolens_fields_##name},
    IOLENS_LAYOUTS(IOLENS_X_LAYOUT)
#undef IOLENS_X_LAYOUT
};
#define IOLENS_NLAYOUTS (sizeof(iolens_layouts) / sizeof(iolens_layouts[0]))

static inline uint32_t iolens_layout_size(uint32_t kind)
{
    switch (kind) {
    case IOLENS_KIND_PROC: return sizeof(struct iolens_proc);
    case IOLENS_KIND_STRING: return sizeof(struct iolens_string);
    case IOLENS_KIND_FILE: return sizeof(struct iolens_file);
    case IOLENS_KIND_TIMELINE: return sizeof(struct iolens_timeline);
    case IOLENS_KIND_CHILD: return sizeof(struct iolens_child);
    case IOLENS_KIND_EVENT: return sizeof(struct iolens_event);
    }
    return 0;
}

/* Size of the SCHEMA payload. */
static inline size_t iolens_schema_size(void)
{
    size_t n = 0;
    for (size_t i = 0; i < IOLENS_NLAYOUTS; i++)
        n += sizeof(struct iolens_schema_kind) + iolens_layouts[i].nfields * sizeof(struct iolens_schema_field);
    return n;
}

/* Write the SCHEMA payload into buf (iolens_schema_size() bytes). */
static inline void iolens_schema_write(void *buf)
{
    char *p = (char *)buf;
    for (size_t i = 0; i < IOLENS_NLAYOUTS; i++) {
        const struct iolens_layout_desc *l = &iolens_layouts[i];
        struct iolens_schema_kind k = {l->kind, l->version, iolens_layout_size(l->kind), l->nfields};
        memcpy(p, &k, sizeof k);
        p += sizeof k;
        for (uint32_t j = 0; j < l->nfields; j++) {
            struct iolens_schema_field f;
            memset(&f, 0, sizeof f);
            strncpy((char *)f.name, l->fields[j].name, IOLENS_SCHEMA_NAME_LEN - 1);
            f.type = l->fields[j].type;
            f.count = l->fields[j].count;
            f.offset = l->fields[j].offset;
            memcpy(p, &f, sizeof f);
            p += sizeof f;
        }
    }
}

#endif
