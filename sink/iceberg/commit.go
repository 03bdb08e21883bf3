package iceberg

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// commit makes the current group (s.batch) one snapshot of the table's main
// branch, with this writer's positions in its summary. Each attempt:
//
//  1. loads the table and reads the stored positions from its newest
//     snapshot that has them;
//  2. leaves out the rows those positions already cover (another process
//     wrote them: a member that lost the partition but still committed, or
//     this process, whose earlier commit landed though its answer was lost);
//  3. writes the group's data files, unless the files of an earlier attempt
//     still hold exactly the rows to commit;
//  4. commits them with the merged positions, on the condition that the
//     branch still points at the snapshot read in 1 (a compare-and-swap in
//     the catalog).
//
// When another writer committed in between, the catalog refuses the commit
// and nothing of it is applied; the attempt starts again at 1 with the same
// files. So a snapshot's positions always extend those of its parent, and a
// row is committed at most once: exactly-once, with concurrent writers.
func (s *Sink) commit(ctx context.Context) error {
	start := time.Now()
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		tbl, err := s.load(ctx)
		if err != nil {
			return s.wrap("loading table "+s.tableName(), err)
		}
		stored, _, _, err := storedIn(tbl.Metadata(), table.MainBranch, s.key)
		if err != nil {
			return s.wrap("reading stored positions", err)
		}
		if !keepPositions() {
			stored = positionMap{}
		}
		if err := s.leaveOutCovered(ctx, stored); err != nil {
			return s.wrap("leaving out rows already in the table", err)
		}
		if s.batch.NumRows() == 0 {
			// Everything was in the table already.
			s.discardFiles(ctx)
			return nil
		}
		if s.files != nil && s.cfg.CleanupMinAge > 0 && time.Since(s.filesAt) > s.cfg.CleanupMinAge/2 {
			// Another process's clean-up may take files this old for
			// orphans: write them again rather than commit them.
			s.discardFiles(ctx)
		}
		if s.files == nil {
			if err := s.writeFiles(ctx, tbl); err != nil {
				return s.wrap("writing data files", err)
			}
		}
		if err := s.step(stepFilesWritten); err != nil {
			return err
		}
		err = s.commitFiles(ctx, tbl, stored)
		if err == nil {
			s.rows.Add(s.batch.NumRows())
			s.commits.Add(1)
			took := int64(time.Since(start))
			s.commitNanos.Add(took)
			if took > s.commitMaxNanos.Load() {
				s.commitMaxNanos.Store(took)
			}
			return nil
		}
		if !conflict(err) {
			// The outcome is unknown: the snapshot may be in the table.
			// The files stay; the group is written again, and its next
			// commit leaves out what the positions then cover.
			s.filesSafe = false
			return s.wrap("committing a snapshot to table "+s.tableName(), err)
		}
		s.conflicts.Add(1)
		s.filesSafe = true
		if attempt >= s.cfg.CommitRetries {
			return s.wrap("committing a snapshot to table "+s.tableName(),
				fmt.Errorf("another writer committed first %d times in a row: %w", attempt+1, err))
		}
		s.log.Debug("iceberg: the table moved during the commit; reading its positions again", "table", s.tableName(), "attempt", attempt+1)
		wait := backoff/2 + rand.N(backoff)
		backoff = min(2*backoff, 2*time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.wrap("committing a snapshot", ctx.Err())
		case <-t.C:
		}
	}
}

// commitFiles commits s.files as one append snapshot of tbl's main branch
// with stored merged with the group's positions in the summary.
func (s *Sink) commitFiles(ctx context.Context, tbl *table.Table, stored positionMap) error {
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return err
	}
	props := iceberg.Properties{}
	if keepPositions() {
		props[s.key] = dataCommitPositions(stored, s.positions).encode()
	}
	// The group's files have fresh names: no other snapshot holds them, so
	// the check that reads every manifest of the table is not needed.
	if err := tx.AddDataFiles(ctx, s.files, props, table.WithoutDuplicateCheck()); err != nil {
		return fmt.Errorf("staging the data files: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	next, err := tx.Commit(cctx)
	if err != nil {
		return err
	}
	if err := s.step(stepCommitted); err != nil {
		return err
	}
	return afterDataCommit(ctx, s, next, stored)
}

// leaveOutCovered drops from s.batch the rows whose offsets stored covers,
// and the files written for them.
func (s *Sink) leaveOutCovered(ctx context.Context, stored positionMap) error {
	keep := 0
	covered := false
	for _, o := range s.origins {
		if pos, ok := stored.get(o.source, o.partition); ok && o.source != "" && o.offset < pos {
			covered = true
			continue
		}
		keep++
	}
	if !covered {
		return nil
	}
	mb := array.NewBooleanBuilder(s.mem)
	defer mb.Release()
	kept := s.origins[:0]
	for _, o := range s.origins {
		if pos, ok := stored.get(o.source, o.partition); ok && o.source != "" && o.offset < pos {
			mb.Append(false)
			continue
		}
		mb.Append(true)
		kept = append(kept, o)
	}
	mask := mb.NewArray()
	defer mask.Release()
	next, err := compute.FilterRecordBatch(ctx, s.batch, mask, compute.DefaultFilterOptions())
	if err != nil {
		return err
	}
	s.skipped.Add(int64(len(s.origins) - keep))
	s.batch.Release()
	s.batch = next
	clear(s.origins[len(kept):])
	s.origins = kept
	s.discardFiles(ctx)
	return nil
}

// writeFiles writes s.batch as data files of tbl (cut at target_file_size,
// one or more per partition), named with a fresh id that carries the
// writer's tag.
func (s *Sink) writeFiles(ctx context.Context, tbl *table.Table) error {
	s.batch.Retain() // WriteRecords releases what it is given
	batch := s.batch
	records := iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) {
		yield(batch, nil)
	})
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var files []iceberg.DataFile
	s.filesAt = time.Now()
	for df, err := range table.WriteRecords(cctx, tbl, s.schema, records,
		table.WithWriteUUID(s.newWriteUUID()), table.WithTargetFileSize(int64(s.cfg.TargetFileSize))) {
		if err != nil {
			s.deleteFiles(ctx, files)
			return err
		}
		files = append(files, df)
	}
	s.files, s.filesSafe = files, true
	return nil
}

// discardFiles deletes the group's files, which no snapshot holds.
func (s *Sink) discardFiles(ctx context.Context) {
	if s.files != nil && s.filesSafe {
		s.deleteFiles(ctx, s.files)
	}
	s.files, s.filesSafe = nil, false
}

func (s *Sink) deleteFiles(ctx context.Context, files []iceberg.DataFile) {
	if len(files) == 0 || s.cat == nil {
		return
	}
	tbl, err := s.load(ctx)
	if err != nil {
		return // left for the clean-up at the next start
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, f := range files {
		if err := fs.Remove(f.FilePath()); err != nil {
			s.log.Debug("iceberg: deleting an uncommitted data file failed; the clean-up at the next start deletes it", "file", f.FilePath(), "err", err)
		}
	}
}
