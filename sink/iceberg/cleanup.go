package iceberg

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// dataFileName matches the names iceberg-go gives data files,
// {partition:05d}-{task}-{write uuid}-{count:05d}.parquet; the write uuid's
// first eight hex digits are the writer's tag (newWriteUUID).
var dataFileName = regexp.MustCompile(`^\d{5}-\d+-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d{5}\.parquet$`)

// cleanup deletes the data files this writer wrote and never committed: a
// process that died between writing a group's files and committing them
// left them in the table's data directory, where no snapshot refers to
// them. A file is this writer's by its name (the tag of pipeline and sink
// name in its write uuid), an orphan when no snapshot of the table (of any
// branch or tag) refers to it, and deleted once it is cleanup_min_age old:
// another process of the same writer (a member of the same Kafka group) may
// be about to commit a younger one, and it never commits a file older than
// half that age (commit). Files of other writers are never touched.
//
// Reading every manifest of every snapshot is the cost of it, once at start.
func (s *Sink) cleanup(ctx context.Context, tbl *table.Table) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	lister, ok := fs.(iceio.ListableIO)
	if !ok {
		s.log.Info("iceberg: the table's storage cannot list files; uncommitted data files of earlier runs are not cleaned up", "table", s.tableName())
		return nil
	}
	root := tbl.Location() + "/data"
	if p, ok := tbl.Properties()[table.WriteDataPathKey]; ok {
		root = p
	}
	tag := hex.EncodeToString(s.tag[:])
	type cand struct {
		path string
		mod  time.Time
	}
	var cands []cand
	err = lister.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return iofs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		m := dataFileName.FindStringSubmatch(path.Base(p))
		if m == nil || m[1] != tag {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		cands = append(cands, cand{p, info.ModTime()})
		return nil
	})
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("listing %s: %w", root, err)
	}
	if len(cands) == 0 {
		return nil
	}
	referenced, err := referencedFiles(ctx, tbl, fs)
	if err != nil {
		return fmt.Errorf("reading the table's manifests: %w", err)
	}
	now := time.Now()
	var deleted, young int
	for _, c := range cands {
		if referenced[normalizePath(c.path)] {
			continue
		}
		if now.Sub(c.mod) < s.cfg.CleanupMinAge {
			young++
			continue
		}
		if err := fs.Remove(c.path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("deleting uncommitted data file %s: %w", c.path, err)
		}
		deleted++
	}
	s.orphans.Add(int64(deleted))
	if deleted > 0 || young > 0 {
		s.log.Info("iceberg: cleaned up data files that an earlier run wrote and never committed",
			"table", s.tableName(), "deleted", deleted, "younger_than_cleanup_min_age", young, "cleanup_min_age", s.cfg.CleanupMinAge)
	}
	return nil
}

// referencedFiles returns every data and delete file that a snapshot of tbl
// refers to.
func referencedFiles(ctx context.Context, tbl *table.Table, fs iceio.IO) (map[string]bool, error) {
	out := map[string]bool{}
	seen := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, err
		}
		for _, m := range manifests {
			if seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			for e, err := range m.Entries(fs, false) {
				if err != nil {
					return nil, err
				}
				out[normalizePath(e.DataFile().FilePath())] = true
			}
		}
	}
	return out, nil
}

// normalizePath makes a local path and its file:// URI compare equal.
func normalizePath(p string) string {
	p = strings.TrimPrefix(p, "file://")
	return path.Clean(p)
}
