/* tmpfiles.c — temporary files removed when a signal ends the process (tmpfiles.h). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/tmpfiles.h"

#define SLOTS 8
#define PATH_LEN 1200

static char slot_path[SLOTS][PATH_LEN];
static volatile sig_atomic_t slot_used[SLOTS];
/* Every signal whose default ends the process and that is not a bug of its own (SEGV, ABRT, ...:
 * then a later run removes what is left, fsutil_remove_stale). */
static const int SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                              SIGPROF, SIGXCPU, SIGQUIT, SIGPIPE};
#define NSIG_HANDLED ((int)(sizeof SIGNALS / sizeof SIGNALS[0]))

static void on_signal(int sig)
{
    for (int i = 0; i < SLOTS; i++)
        if (slot_used[i]) unlink(slot_path[i]);
    signal(sig, SIG_DFL);
    raise(sig);   // delivered when the handler returns: the process ends as the signal says
}

/* Catch the signals that still have their default action (once). */
static void install(void)
{
    static int installed = 0;
    if (installed) return;
    installed = 1;
    for (int k = 0; k < NSIG_HANDLED; k++) {
        struct sigaction old, sa;
        if (sigaction(SIGNALS[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (int j = 0; j < NSIG_HANDLED; j++) sigaddset(&sa.sa_mask, SIGNALS[j]);
        sigaction(SIGNALS[k], &sa, NULL);
    }
}

int tmpfiles_add(const char *path)
{
    if (strlen(path) >= PATH_LEN) return -1;
    install();
    for (int i = 0; i < SLOTS; i++) {
        if (slot_used[i]) continue;
        memcpy(slot_path[i], path, strlen(path) + 1);
        slot_used[i] = 1;   // the path is complete before the handler may read it
        return 0;
    }
    return -1;
}

void tmpfiles_forget(const char *path)
{
    for (int i = 0; i < SLOTS; i++)
        if (slot_used[i] && !strcmp(slot_path[i], path)) slot_used[i] = 0;
}

void tmpfiles_test_hook(void)
{
    static const char *const NAMES[] = {"INT", "TERM", "HUP", "USR1", "USR2", "ALRM", "VTALRM",
                                        "PROF", "XCPU", "QUIT", "PIPE"};
    const char *want = getenv("STABILITY_SIGNAL_WITH_TMP");
    for (int k = 0; want && k < NSIG_HANDLED; k++)
        if (!strcmp(want, NAMES[k])) raise(SIGNALS[k]);
}
