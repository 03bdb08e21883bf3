//go:build noiceberg

package builtin

const leanBuild = true
