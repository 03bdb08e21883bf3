// Package browser tests weir's status page in a real browser: Debian's
// chromium, headless, driven through the DevTools protocol by chromedp,
// against the real weir binary running pipelines with a sink that fails
// for good.
//
// The tests carry the build tag browser; .ci/run installs chromium and runs
// them with WEIR_REQUIRE_BROWSER=1, which turns a missing chromium into a
// failure rather than a skip:
//
//	go test -tags browser -count=1 ./test/browser/
//
// Screenshots of every page checked are kept in a directory the test logs
// (WEIR_BROWSER_ARTIFACTS, or a new one under the system's temporary
// directory).
package browser
