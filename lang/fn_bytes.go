package lang

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"hash/fnv"
	"html"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/weir-etl/weir/record"
)

// Regular expressions, hashes, encodings and ids.

func init() {
	pat := func(more ...Param) []Param {
		return append([]Param{{Name: "s", Type: TString | TNull}, {Name: "pattern", Type: TString, Const: true}}, more...)
	}
	register(
		&Func{Name: "regex_match", Category: "regex", Params: pat(), Result: TBool, Aliases: []string{"matches"},
			Doc: "Whether pattern (RE2 syntax, compiled once at load) matches somewhere in s; also the operator s matches pattern.", Example: "regex_match(\"ab12\", `\\d+`)", Output: "true",
			build: regexFn("regex_match", func(re *regexp.Regexp, s string, _ record.Value) (record.Value, error) {
				return record.BoolValue(re.MatchString(s)), nil
			})},
		&Func{Name: "regex_find", Category: "regex", Params: pat(), Result: TString | TNull,
			Doc: "The first match of pattern in s, or null.", Example: "regex_find(\"id=42;\", `\\d+`)", Output: `"42"`,
			build: regexFn("regex_find", func(re *regexp.Regexp, s string, _ record.Value) (record.Value, error) {
				if loc := re.FindStringIndex(s); loc != nil {
					return sv(s[loc[0]:loc[1]]), nil
				}
				return record.Value{}, nil
			})},
		&Func{Name: "regex_find_all", Category: "regex", Params: pat(Param{Name: "n", Type: TNumber | TNull, Optional: true}), Result: TArray,
			Doc: "Every match of pattern in s (at most n), as an array of strings.", Example: "regex_find_all(\"a1b22c333\", `\\d+`)", Output: `["1", "22", "333"]`,
			build: regexFn("regex_find_all", func(re *regexp.Regexp, s string, n record.Value) (record.Value, error) {
				max, err := optInt("regex_find_all", "n", n, -1)
				if err != nil {
					return record.Value{}, err
				}
				var out []record.Value
				for _, m := range re.FindAllString(s, int(max)) {
					out = append(out, sv(m))
				}
				return record.ArrayValue(out), nil
			})},
		&Func{Name: "regex_capture", Category: "regex", Params: pat(), Result: TObject | TNull,
			Doc:     "The named groups ((?P<name>...)) of the first match of pattern in s, as an object of strings (a group that did not take part is null); null when nothing matches.",
			Example: "regex_capture(\"ann@example.org\", `(?P<user>[^@]+)@(?P<host>.+)`)", Output: `{"user": "ann", "host": "example.org"}`,
			build: regexFn("regex_capture", func(re *regexp.Regexp, s string, _ record.Value) (record.Value, error) {
				m := re.FindStringSubmatchIndex(s)
				if m == nil {
					return record.Value{}, nil
				}
				o := record.NewObj()
				for i, name := range re.SubexpNames() {
					if name == "" {
						continue
					}
					if m[2*i] < 0 {
						o.Set(name, record.Value{})
						continue
					}
					o.Set(name, sv(s[m[2*i]:m[2*i+1]]))
				}
				return record.ObjectValue(o), nil
			})},
		&Func{Name: "regex_replace", Category: "regex", Params: pat(Param{Name: "replacement", Type: TString}), Result: TString, Aliases: []string{"replace_all"},
			Doc: "s with every match of pattern replaced; $1 or ${name} in replacement stand for a group.", Example: "regex_replace(\"2026-02-01\", `(\\d+)-(\\d+)-(\\d+)`, \"$3/$2/$1\")", Output: `"01/02/2026"`,
			build: regexFn("regex_replace", func(re *regexp.Regexp, s string, r record.Value) (record.Value, error) {
				repl, err := str("regex_replace", r)
				if err != nil {
					return record.Value{}, err
				}
				return sv(re.ReplaceAllString(s, repl)), nil
			})},
		&Func{Name: "regex_split", Category: "regex", Params: pat(), Result: TArray,
			Doc: "The parts of s between the matches of pattern.", Example: "regex_split(\"a, b;c\", `[,;] *`)", Output: `["a", "b", "c"]`,
			build: regexFn("regex_split", func(re *regexp.Regexp, s string, _ record.Value) (record.Value, error) {
				var out []record.Value
				for _, p := range re.Split(s, -1) {
					out = append(out, sv(p))
				}
				return record.ArrayValue(out), nil
			})},
	)
	hashFn := func(name, doc, ex, out string, h func() hash.Hash) *Func {
		var pool = sync.Pool{New: func() any { return h() }}
		return &Func{Name: name, Category: "hashing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TString, Doc: doc, Example: ex, Output: out,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str(name, v)
				if err != nil {
					return record.Value{}, err
				}
				d := pool.Get().(hash.Hash)
				d.Reset()
				d.Write([]byte(s))
				var sum [64]byte
				r := sv(hex.EncodeToString(d.Sum(sum[:0])))
				pool.Put(d)
				return r, nil
			}}
	}
	register(
		hashFn("md5", "The MD5 digest of s's bytes, in hex (for checksums, not security).", `md5("abc")`, `"900150983cd24fb0d6963f7d28e17f72"`, md5.New),
		hashFn("sha1", "The SHA-1 digest of s's bytes, in hex.", `sha1("abc")`, `"a9993e364706816aba3e25717850c26c9cd0d89d"`, sha1.New),
		hashFn("sha256", "The SHA-256 digest of s's bytes, in hex.", `sha256("abc")`, `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`, sha256.New),
		hashFn("sha512", "The SHA-512 digest of s's bytes, in hex.", `substr(sha512("abc"), 0, 16)`, `"ddaf35a193617aba"`, sha512.New),
		&Func{Name: "hmac_sha256", Category: "hashing", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "key", Type: TString}}, Result: TString,
			Doc: "The HMAC-SHA256 of s's bytes under key, in hex.", Example: `hmac_sha256("msg", "key")`, Output: `"2d93cbc1be167bcb1637a4a23cbff01a7878f0c50ee833954ea5221bb1b8c628"`,
			fn2: func(a, b record.Value) (record.Value, error) {
				s, k, err := strings2("hmac_sha256", a, b)
				if err != nil {
					return record.Value{}, err
				}
				m := hmac.New(sha256.New, []byte(k))
				m.Write([]byte(s))
				return sv(hex.EncodeToString(m.Sum(nil))), nil
			}},
		&Func{Name: "xxhash64", Category: "hashing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TString,
			Doc: "The 64-bit xxHash of s's bytes, as 16 hex digits (a string: an unsigned 64-bit number does not fit an int).", Example: `xxhash64("abc")`, Output: `"44bc2cf5ad770999"`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("xxhash64", v)
				if err != nil {
					return record.Value{}, err
				}
				var b [8]byte
				binary.BigEndian.PutUint64(b[:], xxhash.Sum64String(s))
				return sv(hex.EncodeToString(b[:])), nil
			}},
		&Func{Name: "crc32", Category: "hashing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TInt,
			Doc: "The CRC-32 (IEEE) checksum of s's bytes, as an integer.", Example: `crc32("abc")`, Output: `891568578`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("crc32", v)
				if err != nil {
					return record.Value{}, err
				}
				return record.IntValue(int64(crc32.ChecksumIEEE([]byte(s)))), nil
			}},
		&Func{Name: "fnv32", Category: "hashing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TInt,
			Doc: "The 32-bit FNV-1a hash of s's bytes, as an integer (for bucketing: fnv32(id) % 16).", Example: `fnv32("abc")`, Output: `440920331`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("fnv32", v)
				if err != nil {
					return record.Value{}, err
				}
				h := fnv.New32a()
				h.Write([]byte(s))
				return record.IntValue(int64(h.Sum32())), nil
			}},
		&Func{Name: "fnv64", Category: "hashing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TString,
			Doc: "The 64-bit FNV-1a hash of s's bytes, as 16 hex digits.", Example: `fnv64("abc")`, Output: `"e71fa2190541574b"`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("fnv64", v)
				if err != nil {
					return record.Value{}, err
				}
				h := fnv.New64a()
				h.Write([]byte(s))
				return sv(hex.EncodeToString(h.Sum(nil))), nil
			}},
	)
	enc := func(name, doc, ex, out string, fn func(string) (string, error), aliases ...string) *Func {
		return &Func{Name: name, Category: "encoding", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TString, Doc: doc, Example: ex, Output: out, Aliases: aliases,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str(name, v)
				if err != nil {
					return record.Value{}, err
				}
				r, err := fn(s)
				if err != nil {
					return record.Value{}, fnError(name, "%v", err)
				}
				return sv(r), nil
			}}
	}
	b64 := func(name string, decode bool) *Func {
		doc := "s's bytes in base64; variant is std (default), url, raw_std or raw_url (raw: without = padding)."
		ex, out := `base64_encode("hi?", "url")`, `"aGk_"`
		if decode {
			doc = "The bytes whose base64 is s (which may hold any bytes); variant as for base64_encode."
			ex, out = `base64_decode("aGk/")`, `"hi?"`
		}
		var alias []string
		if name == "base64_encode" {
			alias = []string{"toBase64"}
		} else {
			alias = []string{"fromBase64"}
		}
		return &Func{Name: name, Category: "encoding", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "variant", Type: TString, Optional: true, Const: true}},
			Result: TString, Doc: doc, Example: ex, Output: out, Aliases: alias,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				variant := "std"
				if len(args) > 1 {
					variant = args[1].val.Text()
				}
				e, ok := map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw_std": base64.RawStdEncoding, "raw_url": base64.RawURLEncoding}[variant]
				if !ok {
					return compiled{}, c.errAt(x.args[1], "%s: unknown variant %q: std, url, raw_std or raw_url", name, variant)
				}
				f := &Func{Name: name, Result: TString, fn1: func(v record.Value) (record.Value, error) {
					s, err := str(name, v)
					if err != nil {
						return record.Value{}, err
					}
					if !decode {
						return sv(e.EncodeToString([]byte(s))), nil
					}
					b, err := e.DecodeString(s)
					if err != nil {
						return record.Value{}, fnError(name, "%q is not %s base64: %v", truncateText(s), variant, err)
					}
					return sv(string(b)), nil
				}}
				return c.direct(f, args[:1]), nil
			}}
	}
	register(
		enc("hex_encode", "s's bytes as lower-case hex.", `hex_encode("hi")`, `"6869"`, func(s string) (string, error) { return hex.EncodeToString([]byte(s)), nil }),
		enc("hex_decode", "The bytes whose hex is s.", `hex_decode("6869")`, `"hi"`, func(s string) (string, error) {
			b, err := hex.DecodeString(s)
			return string(b), err
		}),
		b64("base64_encode", false),
		b64("base64_decode", true),
		enc("url_escape", "s escaped for a URL's query (space as +).", `url_escape("a b&c")`, `"a+b%26c"`, func(s string) (string, error) { return url.QueryEscape(s), nil }),
		enc("url_unescape", "The text whose query escape is s.", `url_unescape("a+b%26c")`, `"a b&c"`, url.QueryUnescape),
		enc("url_path_escape", "s escaped for a URL's path segment (space as %20).", `url_path_escape("a b/c")`, `"a%20b%2Fc"`, func(s string) (string, error) { return url.PathEscape(s), nil }),
		enc("html_escape", "s with <, >, &, ' and \" escaped for HTML.", `html_escape("<a href='x'>")`, `"&lt;a href=&#39;x&#39;&gt;"`, func(s string) (string, error) { return html.EscapeString(s), nil }),
		enc("html_unescape", "The text of HTML entities in s.", `html_unescape("&lt;b&gt; &amp; &#233;")`, `"<b> & é"`, func(s string) (string, error) { return html.UnescapeString(s), nil }),
	)
	register(
		&Func{Name: "uuid_v4", Category: "ids", Result: TString, Impure: true, Doc: "A random UUID (version 4).", Example: `len(uuid_v4())`, Output: `36`,
			fnN: func([]record.Value) (record.Value, error) {
				var b [16]byte
				rand.Read(b[:])
				b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
				return sv(uuidText(b)), nil
			}},
		&Func{Name: "uuid_v7", Category: "ids", Result: TString, Impure: true, Doc: "A UUID of version 7: the time in milliseconds, then random bits; they sort by time.", Example: `substr(uuid_v7(), 14, 15)`, Output: `"7"`,
			fnN: func([]record.Value) (record.Value, error) {
				var b [16]byte
				rand.Read(b[6:])
				ms := uint64(time.Now().UnixMilli())
				for i := 0; i < 6; i++ {
					b[i] = byte(ms >> (40 - 8*i))
				}
				b[6], b[8] = b[6]&0x0f|0x70, b[8]&0x3f|0x80
				return sv(uuidText(b)), nil
			}},
		&Func{Name: "ulid", Category: "ids", Result: TString, Impure: true, Doc: "A ULID: 26 characters of Crockford base32, the time in milliseconds then random bits; they sort by time.", Example: `len(ulid())`, Output: `26`,
			fnN: func([]record.Value) (record.Value, error) {
				var b [16]byte
				rand.Read(b[6:])
				ms := uint64(time.Now().UnixMilli())
				for i := 0; i < 6; i++ {
					b[i] = byte(ms >> (40 - 8*i))
				}
				return sv(ulidText(b)), nil
			}},
	)
}

func uuidText(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulidText encodes 128 bits as 26 base32 characters, most significant
// first (the first character holds the top 3 bits).
func ulidText(b [16]byte) string {
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// regexFn is the build of a function of a string and a constant pattern,
// compiled once at load: a bad pattern is a load error.
func regexFn(name string, fn func(re *regexp.Regexp, s string, extra record.Value) (record.Value, error)) func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
	return func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
		re, err := regexp.Compile(args[1].val.Text())
		if err != nil {
			return compiled{}, c.errAt(x.args[1], "%s: bad regular expression: %s", name, regexpMessage(err))
		}
		if name == "regex_capture" && len(re.SubexpNames()) > 0 && !strings.Contains(args[1].val.Text(), "(?P<") && !strings.Contains(args[1].val.Text(), "(?<") {
			return compiled{}, c.errAt(x.args[1], "regex_capture: the pattern has no named group: name them, as in (?P<user>\\w+)")
		}
		impl := func(a, b record.Value) (record.Value, error) {
			s, err := str(name, a)
			if err != nil {
				return record.Value{}, err
			}
			return fn(re, s, b)
		}
		f := &Func{Name: name, Result: lookupFunc(name).Result, fn2: impl, fn1: func(a record.Value) (record.Value, error) { return impl(a, record.Value{}) }}
		rest := []compiled{args[0]}
		if len(args) > 2 {
			rest = append(rest, args[2])
		}
		return c.direct(f, rest), nil
	}
}

// truncateText cuts s for a message.
func truncateText(s string) string {
	if len(s) > 40 {
		return s[:37] + "…"
	}
	return s
}
