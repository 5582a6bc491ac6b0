/* Names for the instruction addresses of call stacks, resolved once per distinct address at exit.
 *
 * Function names come from the ELF symbol table of the module holding the address (.symtab when
 * the file has one, so functions of an executable that exports nothing are named too, else
 * .dynsym), read from the file on disk; dladdr is the fallback.  C++ names are demangled when the
 * process has the C++ runtime loaded.  file:line needs DWARF line tables: when asked, addr2line
 * (binutils) is run once per module as a child process, with all of the module's addresses.
 *
 * A frame reads "function+0xOFF (library+0xOFF) file:line", parts that are unknown left out
 * (see npkit_stack_rec in include/npkit/event_log.h). */
#ifndef NPKIT_STACK_SYMBOLS_H
#define NPKIT_STACK_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

/* Longest frame text written (a longer C++ name is cut). */
#define NPKIT_FRAME_TEXT_MAX 1024

/* Sets out[i] to a malloc'd frame text for each ips[i] (return addresses: the call instruction
 * just before is what is looked up).  lines: file:line through addr2line as well.  Returns 0, or
 * -1 when memory is short (out[] may be partly filled: the caller frees what is not NULL). */
int npkit_symbolise(const uintptr_t *ips, size_t n, int lines, char **out);

#endif
