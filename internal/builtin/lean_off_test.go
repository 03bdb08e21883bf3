//go:build !noiceberg

package builtin

const leanBuild = false
