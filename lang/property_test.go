package lang

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash/crc32"
	"hash/fnv"
	"html"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/record"
)

// The functions with a reference in Go's standard library are checked
// against it on generated inputs: bytes of any kind (not UTF-8 too), and
// times across centuries and zones.

func quote(s string) string { return string(record.AppendString(nil, s)) }

// evalString evaluates src on {"s": s, "k": k} and returns its string.
func evalString(t *rapid.T, src, s, k string) (string, error) {
	p, err := Compile(src, Options{})
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	r := record.New([]byte(`{"s":` + quote(s) + `,"k":` + quote(k) + `}`))
	var o record.Obj
	if err := r.Index(&o); err != nil {
		t.Fatalf("%v", err)
	}
	e := NewEnv()
	e.Bind(&r, &o)
	v, err := e.Eval(p)
	if err != nil {
		return "", err
	}
	switch v.Kind() {
	case record.String:
		return v.Text(), nil
	case record.Int, record.Bool:
		return string(v.AppendJSON(nil)), nil
	}
	return string(v.AppendJSON(nil)), nil
}

func TestHashesAgreeWithTheStandardLibrary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.Byte()).Draw(t, "s"))
		k := string(rapid.SliceOf(rapid.Byte()).Draw(t, "k"))
		m5, s1, s2, s5 := md5.Sum([]byte(s)), sha1.Sum([]byte(s)), sha256.Sum256([]byte(s)), sha512.Sum512([]byte(s))
		mac := hmac.New(sha256.New, []byte(k))
		mac.Write([]byte(s))
		f32, f64 := fnv.New32a(), fnv.New64a()
		f32.Write([]byte(s))
		f64.Write([]byte(s))
		for src, want := range map[string]string{
			"md5(s)": hex.EncodeToString(m5[:]), "sha1(s)": hex.EncodeToString(s1[:]), "sha256(s)": hex.EncodeToString(s2[:]),
			"sha512(s)": hex.EncodeToString(s5[:]), "hmac_sha256(s, k)": hex.EncodeToString(mac.Sum(nil)),
			"crc32(s)": strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(s))), 10),
			"fnv32(s)": strconv.FormatUint(uint64(f32.Sum32()), 10), "fnv64(s)": hex.EncodeToString(f64.Sum(nil)),
		} {
			got, err := evalString(t, src, s, k)
			if err != nil || got != want {
				t.Fatalf("%s of %q = %s, %v; want %s", src, s, got, err, want)
			}
		}
	})
}

func TestEncodingsAgreeWithTheStandardLibrary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.Byte()).Draw(t, "s"))
		for src, want := range map[string]string{
			"hex_encode(s)": hex.EncodeToString([]byte(s)), `base64_encode(s)`: base64.StdEncoding.EncodeToString([]byte(s)),
			`base64_encode(s, "url")`: base64.URLEncoding.EncodeToString([]byte(s)), `base64_encode(s, "raw_url")`: base64.RawURLEncoding.EncodeToString([]byte(s)),
			"url_escape(s)": url.QueryEscape(s), "url_path_escape(s)": url.PathEscape(s), "html_escape(s)": html.EscapeString(s),
			"html_unescape(s)": html.UnescapeString(s),
		} {
			got, err := evalString(t, src, s, "")
			if err != nil || got != want {
				t.Fatalf("%s of %q = %q, %v; want %q", src, s, got, err, want)
			}
		}
		// Decoding gives the bytes back.
		for _, src := range []string{"hex_decode(hex_encode(s))", `base64_decode(base64_encode(s, "raw_std"), "raw_std")`, "url_unescape(url_escape(s))"} {
			got, err := evalString(t, src, s, "")
			if err != nil || got != s {
				t.Fatalf("%s of %q = %q, %v", src, s, got, err)
			}
		}
		want, werr := url.QueryUnescape(s)
		got, err := evalString(t, "url_unescape(s)", s, "")
		if (werr == nil) != (err == nil) || werr == nil && got != want {
			t.Fatalf("url_unescape(%q) = %q, %v; want %q, %v", s, got, err, want, werr)
		}
	})
}

func TestRegexAgreesWithTheStandardLibrary(t *testing.T) {
	patterns := []string{`\d+`, `[a-z]+`, `(a|b)*c`, `\s`, `^.`, `.$`, `é+`, `(?i)x`}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringMatching(`[a-c0-9 xXé\n]{0,12}`).Draw(t, "s")
		p := rapid.SampledFrom(patterns).Draw(t, "p")
		re := regexp.MustCompile(p)
		lit := "`" + p + "`"
		find := "null"
		if loc := re.FindStringIndex(s); loc != nil {
			find = s[loc[0]:loc[1]]
		}
		for src, want := range map[string]string{
			"regex_match(s, " + lit + ")":                 strconv.FormatBool(re.MatchString(s)),
			"regex_find(s, " + lit + ") ?? \"null\"":      find,
			"regex_replace(s, " + lit + ", \"<$0>\")":     re.ReplaceAllString(s, "<$0>"),
			"join(regex_split(s, " + lit + "), \"|\")":    strings.Join(re.Split(s, -1), "|"),
			"join(regex_find_all(s, " + lit + "), \"|\")": strings.Join(re.FindAllString(s, -1), "|"),
		} {
			got, err := evalString(t, src, s, "")
			if err != nil || got != want {
				t.Fatalf("%s on %q = %q, %v; want %q", src, s, got, err, want)
			}
		}
	})
}

func TestStringsAgreeWithTheStandardLibrary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		if !utf8.ValidString(s) {
			return
		}
		for src, want := range map[string]string{
			"upper(s)": strings.ToUpper(s), "lower(s)": strings.ToLower(s), "trim(s)": strings.TrimSpace(s),
			"len(s)": strconv.Itoa(utf8.RuneCountInString(s)), `replace(s, "a", "b")`: strings.ReplaceAll(s, "a", "b"),
			`join(split(s, "a"), "a")`: s, `index_of(s, "a") >= 0`: strconv.FormatBool(strings.Contains(s, "a")),
		} {
			got, err := evalString(t, src, s, "")
			if err != nil || got != want {
				t.Fatalf("%s of %q = %q, %v; want %q", src, s, got, err, want)
			}
		}
	})
}

// Guarantee: strftime formats and parses as Go's time package does with the
// equivalent layout, across years, fractions and zones, and parsing what
// format_time wrote gives the instant back.
func TestTimeAgreesWithTheStandardLibrary(t *testing.T) {
	zones := []string{"UTC", "Europe/Paris", "America/St_Johns", "Asia/Kathmandu", "Pacific/Chatham"}
	layouts := []struct{ strf, goL string }{
		{"%Y-%m-%dT%H:%M:%S%z", "2006-01-02T15:04:05-0700"},
		{"%Y-%m-%d %H:%M:%S.%N %:z", "2006-01-02 15:04:05.000000000 -07:00"},
		{"%d/%m/%y %I:%M %p", "02/01/06 03:04 PM"},
		{"%a, %d %b %Y %H:%M:%S %z", time.RFC1123Z},
		{"%A %B %e %j %L", "Monday January _2 002 .000"},
	}
	rapid.Check(t, func(t *rapid.T) {
		sec := rapid.Int64Range(-2208988800, 4102444800).Draw(t, "sec") // 1900 to 2100
		ns := rapid.Int64Range(0, 999999999).Draw(t, "ns")
		zone := rapid.SampledFrom(zones).Draw(t, "zone")
		l := rapid.SampledFrom(layouts).Draw(t, "layout")
		loc, _ := time.LoadLocation(zone)
		tm := time.Unix(sec, ns).In(loc)
		want := tm.Format(l.goL)
		if l.strf == "%A %B %e %j %L" {
			want = strings.Replace(want, " .", " ", 1)
		}
		src := `format_time(from_unix(` + strconv.FormatInt(sec*1e9+ns, 10) + `, "ns"), "` + l.strf + `", "` + zone + `")`
		got, err := evalString(t, src, "", "")
		if err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q", src, got, err, want)
		}
		if _, off := tm.Zone(); off%60 == 0 && (strings.Contains(l.strf, "%z") || strings.Contains(l.strf, "%:z")) { // %z has no seconds (local mean times before 1912)
			back := `to_unix(parse_time(s, "` + l.strf + `"), "s")`
			got, err := evalString(t, back, want, "")
			if err != nil || got != strconv.FormatInt(sec, 10) {
				t.Fatalf("%s on %q = %s, %v; want %d", back, want, got, err, sec)
			}
		}
		// The named layouts are Go's.
		src = `format_time(from_unix(` + strconv.FormatInt(sec, 10) + `), "rfc3339nano")`
		if got, err := evalString(t, src, "", ""); err != nil || got != time.Unix(sec, 0).UTC().Format(time.RFC3339Nano) {
			t.Fatalf("%s = %q, %v", src, got, err)
		}
	})
}
