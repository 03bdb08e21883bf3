package file

import "github.com/weir-etl/weir/internal/fileformat"

// The CSV framing of a record is the one the file and S3 sources share
// (internal/fileformat).
var (
	splitCSV = fileformat.SplitCSV
	trimCR   = fileformat.TrimCR
)
