/* glibc's lock of the loaded-object list (the one dl_iterate_phdr holds), found at start and reset
 * in a fork child, as glibc 2.36 resets the loader's other lock but not this one. */
#ifndef FLTRACE_RT_DLWALK_H
#define FLTRACE_RT_DLWALK_H

void dlwalk_init(void);       /* once per process image, before any fork */
void dlwalk_fork_child(void); /* in the child, before anything of ours walks the list */

#endif
