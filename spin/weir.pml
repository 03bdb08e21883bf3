/*
 * weir's checkpoint protocol, for spin.
 *
 * The protocol, not the code: issue / ack / fail / drain / commit / revoke /
 * reassign over two partitions, each going through up to two epochs. The
 * Go ack path (reference counts, the MPSC queue, the wake channel) is checked
 * by the Go explorer (internal/modelcheck); here every batch resolution is one
 * message, and docs/modelcheck.md lists what else is abstracted away.
 *
 * Properties (assertions):
 *   P1  the watermark of an epoch only passes batches of that epoch that were
 *       delivered: never an unresolved or failed one, and never because of an
 *       acknowledgement of another (stale) epoch;
 *   P2  a committed position never passes an offset that no epoch delivered;
 *   P3  neither the watermark of an epoch nor the source's committed position
 *       ever moves back.
 *
 * Seeded bugs, one at a time: -DBUG_NO_EPOCH_CHECK applies acknowledgements
 * of any epoch; -DBUG_ADVANCE_FAILED lets the watermark pass a failed batch.
 * -DREWIND_ANYTIME is not a bug in the model but a use the protocol does not
 * support: rewinding while the watermark can still move. It violates only P3
 * (the source's committed offset can move back: a re-read, never a loss).
 *
 * Sizes: partition 0 has two epochs of NB batches; partition 1 has P1ROUNDS
 * epochs of P1NB batches (default 2 and 1; 2 and 2 needs several GB).
 */

#define NP 2        /* partitions */
#define NB 2        /* batches per epoch */
#define NE 5        /* epochs are 1..4: two per partition */
#define MAXPOS 5    /* offsets 0..4 */
#ifndef P1ROUNDS
#define P1ROUNDS 2
#endif
#ifndef P1NB
#define P1NB 1
#endif

#define DELIVERED 1
#define FAILED    2

mtype = { ASSIGN, REVOKE, ACK };

/* The Checkpointer's queue, one per partition (see checkpointer below):
 * never full in this model, as the real one is unbounded. Fields: kind, partition, epoch, seq (revoke: batches issued),
 * position (assign: start; ack: end), status. */
chan q[NP] = [8] of { mtype, byte, byte, byte, byte, byte };

byte epochs;                    /* last epoch handed out */

/* Ghost state, written by sinks when they resolve a batch. */
byte ghost[NE * NB];            /* per (epoch, seq): 0 unresolved, DELIVERED, FAILED */
bool odone[NP * MAXPOS];        /* per (partition, offset): some epoch delivered it */

/* Checkpointer state, per partition. */
byte cur[NP];                   /* current epoch; 0 when unassigned or forgotten */
bool closing[NP];               /* revoked: no more batches in the epoch */
byte issued[NP];                /* closing: batches the epoch issued */
byte resolved[NP];              /* resolutions applied in the epoch */
byte wm[NP];                    /* watermark */
byte nxt[NP];                   /* oldest seq the watermark has not passed */
byte slot[NP * NB];             /* resolution of (partition, seq): 0, DELIVERED, FAILED */
byte spos[NP * NB];             /* its end position */
byte cpcom[NP];                 /* last position committed in the epoch */
byte srccom[NP];                /* the source's committed offset: where a restart resumes */
bool blocked[NP];               /* the watermark waits on a failed batch */
bool forgotten[NP];             /* revoked, drained, final commit made, forgotten */

/* A sink writes one batch's records, or fails to, and releases its reference.
 * The ghost is set before the resolution is sent: it is the truth the
 * Checkpointer may only learn afterwards. */
proctype sink(byte p; byte e; byte k; byte pos) {
	atomic {
		if
		:: ghost[e * NB + k] = DELIVERED; odone[p * MAXPOS + pos - 1] = true
		:: ghost[e * NB + k] = FAILED
		fi;
		q[p] ! ACK, p, e, k, pos, ghost[e * NB + k]
	}
}

/* The polling goroutine of one partition: assign, issue NB batches (batch k of
 * an epoch starting at s covers offset s+k and ends at s+k+1), then either
 * rebalance (revoke, wait for the final commit, be assigned again at the
 * source's committed offset) or rewind (the failure policy, once the
 * watermark is blocked on a failed batch: assign again at the watermark while
 * the epoch's other batches are still in flight), or stop. */
proctype issuer(byte p; byte rounds; byte nb) {
	byte e, k, start, round;
	do
	:: round < rounds ->
		atomic {
			epochs++; e = epochs;
			q[p] ! ASSIGN, p, e, 0, start, 0;
			k = 0;
			do
			:: k < nb -> run sink(p, e, k, start + k + 1); k++
			:: else -> break
			od;
			k = 0;
			round++
		};
		if
		:: round < rounds -> q[p] ! REVOKE, p, e, nb, 0, 0;
		   forgotten[p];                       /* the owner waits for Drained, commits, forgets */
		   start = srccom[p]
#ifdef REWIND_ANYTIME
		:: atomic { round < rounds && cur[p] == e -> start = wm[p] }
#else
		:: atomic { round < rounds && blocked[p] && cur[p] == e -> start = wm[p] }
#endif
		:: break
		fi
	:: else -> break
	od
}

/* Applying a resolution of the current epoch: record it, then pass every
 * delivered batch at the head. */
inline apply(p, e, s, pos, st) {
	slot[p * NB + s] = st;
	spos[p * NB + s] = pos;
	resolved[p]++;
	do
#ifdef BUG_ADVANCE_FAILED
	:: nxt[p] < NB && slot[p * NB + nxt[p]] != 0 ->
#else
	:: nxt[p] < NB && slot[p * NB + nxt[p]] == DELIVERED ->
#endif
		assert(ghost[cur[p] * NB + nxt[p]] == DELIVERED);   /* P1 */
		assert(spos[p * NB + nxt[p]] >= wm[p]);             /* P3 */
		wm[p] = spos[p * NB + nxt[p]];
		nxt[p]++
	:: else -> break
	od;
	blocked[p] = (nxt[p] < NB && slot[p * NB + nxt[p]] == FAILED)
}

/* Committing p's watermark to the source: every offset below it must have
 * been delivered by some epoch (o is the checkpointer's scratch variable). */
inline commit(p) {
	o = 0;
	do
	:: o < wm[p] -> assert(odone[p * MAXPOS + o]); o++  /* P2 */
	:: else -> break
	od;
	o = 0;
	assert(wm[p] >= srccom[p]);                                 /* P3 */
	srccom[p] = wm[p];
	cpcom[p] = wm[p]
}

inline clearslots(p) {
	slot[p * NB] = 0; slot[p * NB + 1] = 0;
	spos[p * NB] = 0; spos[p * NB + 1] = 0
}

/* One queue message: Drain's switch. The watermark is committed at once when
 * it moved: the finest commit interval, of which any coarser one commits a
 * subset of the same positions. A revoked partition whose batches all
 * resolved is forgotten (its final commit is already made). */
inline handle() {
	if
	:: t == ASSIGN ->
		cur[p] = e; closing[p] = false; resolved[p] = 0; issued[p] = 0;
		wm[p] = pos; nxt[p] = 0; cpcom[p] = pos;
		blocked[p] = false; forgotten[p] = false;
		clearslots(p)
	:: t == REVOKE ->
		if
		:: cur[p] == e -> closing[p] = true; issued[p] = s
		:: else -> skip
		fi
	:: t == ACK ->
		if
#ifdef BUG_NO_EPOCH_CHECK
		:: cur[p] != 0 -> apply(p, e, s, pos, st)
#else
		:: cur[p] != 0 && cur[p] == e -> apply(p, e, s, pos, st)
#endif
		:: else -> skip                      /* stale: discarded */
		fi
	fi;
	if
	:: cur[p] != 0 && wm[p] > cpcom[p] -> commit(p)
	:: else -> skip
	fi;
	if
	:: closing[p] && !forgotten[p] && resolved[p] == issued[p] ->
		cur[p] = 0; closing[p] = false; forgotten[p] = true
	:: else -> skip
	fi;
	t = 0; p = 0; e = 0; s = 0; pos = 0; st = 0
}

/* The Checkpointer's goroutine. The real one has a single queue; here each
 * partition has its own, which keeps each partition's order (all the
 * Checkpointer's per-partition logic can see) and spares the model every
 * shuffle of two independent streams. */
active proctype checkpointer() {
	mtype t;
	byte p, e, s, pos, st, o;
end:
	do
	:: d_step { q[0] ? t, p, e, s, pos, st; handle() }
	:: d_step { q[1] ? t, p, e, s, pos, st; handle() }
	od
}

init {
	atomic {
		run issuer(0, 2, NB);
		run issuer(1, P1ROUNDS, P1NB)
	}
}
