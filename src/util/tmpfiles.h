/* tmpfiles.h — temporary files removed when a signal ends the process (docs/design.md §6):
 * INT, TERM, HUP, USR1, USR2, ALRM, VTALRM, PROF, XCPU, QUIT, PIPE (SIGXFSZ is ignored: the
 * write fails and the writer cleans up). A probe's, dump's or merge's <file>.tmp.<pid>, a
 * resume's <file>.resume.<pid>, a journal's <file>.checkpoint.tmp.<pid>; what SIGKILL or a
 * crash leaves, a later writer of the file removes (util/fsutil.h's fsutil_remove_stale). The handler only unlinks the registered paths (async-signal-safe) and
 * re-raises the signal with its default action, so the process still ends as the signal says.
 * It is installed for a signal only while that signal has its default action: an ignored
 * signal stays ignored, and a process that catches one itself (a training run) keeps its own.
 *
 * Test hook: STABILITY_SIGNAL_WITH_TMP=INT|TERM|HUP|USR1|USR2|... raises that signal as soon as a
 * temporary file exists (tmpfiles_test_hook), for deterministic tests.
 */
#ifndef STABILITY_TMPFILES_H
#define STABILITY_TMPFILES_H

/* Remove path if one of the signals ends the process. Returns 0, or −1 when the table is full
 * or path too long (the file is then merely not removed on a signal). */
int tmpfiles_add(const char *path);

/* Forget path (after it was renamed to its final name or unlinked). */
void tmpfiles_forget(const char *path);

/* The test hook above: raise the signal STABILITY_SIGNAL_WITH_TMP names, if any. */
void tmpfiles_test_hook(void);

#endif
