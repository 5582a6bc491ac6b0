/* a
#define NPKIT_EVENT_X 1 */
// #define NPKIT_EVENT_Y 2
#define NPKIT_EVENT_Z (0x3u) // z
const char *s = "/*";
#define NPKIT_EVENT_W \
 4
