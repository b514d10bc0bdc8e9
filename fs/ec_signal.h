/* ec_signal.h — writes 1 to an eventfd whose open file description a caller
 * controls (blocking or not, counter anywhere), without ever blocking for long.
 *
 * Contract: one ec_signal per thread; ec_signal_new and ec_signal_post are called
 * on that thread only (the timer signal is directed at it). ec_signal_post returns
 * after at most EC_SIGNAL_TIMEOUT_MS even when the caller keeps its counter full.
 * The descriptor must be an eventfd (checked by the caller): writing anything else
 * could reach a filesystem.
 */
#ifndef OOMD_FS_EC_SIGNAL_H
#define OOMD_FS_EC_SIGNAL_H

#include <stdbool.h>

/* How long a write may sleep in eventfd_write before the timer interrupts it. A write
 * only sleeps when the counter is full, and only a reader draining it ends that sleep;
 * 20 ms is far above a write that does not sleep (microseconds) and bounds the delay one
 * hostile listener adds to the listeners queued behind it. */
#define EC_SIGNAL_TIMEOUT_MS 20

typedef enum {
	EC_SIGNAL_SENT,      /* the counter went up by one */
	EC_SIGNAL_SATURATED, /* the counter is at 2^64-2: its reader is awake already */
	EC_SIGNAL_WEDGED,    /* the counter filled between our poll and our write */
	EC_SIGNAL_FAILED,    /* another error (errno set) */
} ec_signal_result;

typedef struct ec_signal ec_signal;

/* NULL with errno on failure. */
ec_signal *ec_signal_new(void);
void ec_signal_free(ec_signal *s);
/* s NULL (no timer could be made): nothing is written (EC_SIGNAL_FAILED, ENOTSUP), since an
 * unbounded write to a blocking eventfd could wait as long as its owner likes. */
ec_signal_result ec_signal_post(ec_signal *s, int efd);
/* The write alone, under the timer, without the poll first (tests). */
ec_signal_result ec_signal_write(ec_signal *s, int efd);

#endif
