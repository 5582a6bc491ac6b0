/* The tree writer (tree_writer.h) over the JSON writer. */
#include "tree_writer.h"

static npkit_json *w_of(npkit_tree *t) { return ((npkit_json_tree *)t)->w; }

static void key(npkit_tree *t, const char *k) { npkit_json_key(w_of(t), k); }
static void begin_object(npkit_tree *t) { npkit_json_begin_object(w_of(t)); }
static void end_object(npkit_tree *t) { npkit_json_end_object(w_of(t)); }
static void begin_array(npkit_tree *t) { npkit_json_begin_array(w_of(t)); }
static void end_array(npkit_tree *t) { npkit_json_end_array(w_of(t)); }
static void string(npkit_tree *t, const char *v) { npkit_json_string(w_of(t), v); }
static void string_n(npkit_tree *t, const char *v, size_t n) { npkit_json_string_n(w_of(t), v, n); }
static void int64(npkit_tree *t, int64_t v) { npkit_json_int(w_of(t), v); }
static void uint64(npkit_tree *t, uint64_t v) { npkit_json_uint(w_of(t), v); }
static void real(npkit_tree *t, double v) { npkit_json_double(w_of(t), v); }
static void boolean(npkit_tree *t, int v) { npkit_json_bool(w_of(t), v); }
static void null(npkit_tree *t) { npkit_json_null(w_of(t)); }
static void hex(npkit_tree *t, uint64_t v, int width) { npkit_json_hex(w_of(t), v, width); }
static void next_line(npkit_tree *t) { npkit_json_next_line(w_of(t)); }

static const npkit_tree_ops json_tree_ops = {key,    begin_object, end_object, begin_array, end_array,
                                             string, string_n,     int64,      uint64,      real,
                                             boolean, null,        hex,        next_line};

void npkit_json_tree_init(npkit_json_tree *t, npkit_json *w) {
  t->base.ops = &json_tree_ops;
  t->w = w;
}
