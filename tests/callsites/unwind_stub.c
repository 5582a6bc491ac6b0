/* Stands in for libunwind.so.8 where it "lacks" what the preloaded library needs: it loads, but has
 * no unw_backtrace.  Put its folder first in LD_LIBRARY_PATH to run a job as if libunwind were
 * missing. */
int npkit_unwind_stub(void);
int npkit_unwind_stub(void) { return 0; }
