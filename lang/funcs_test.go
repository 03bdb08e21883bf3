package lang

import (
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
)

// fcase is one evaluation of a function: src on the record value gives want
// (an expression, compared with same) or, when want starts with "!", a
// record error containing the rest, which names the function.
type fcase struct{ src, value, want string }

// funcCases are each function's table: values, edge cases (empty, unicode,
// null) and invalid input, which must be a record error naming the
// function. TestEveryFunctionHasCases keeps it complete.
var funcCases = []fcase{
	// strings
	{`upper(s)`, `{"s":"ça"}`, `"ÇA"`}, {`upper(s)`, `{"s":""}`, `""`}, {`upper(s)`, `{"s":1}`, `!upper: 1 is int, not a string`}, {`upper(s)`, `{"s":"\u00ff"}`, `"Ÿ"`},
	{`upper(s)`, "{\"s\":\"a\xff\"}", `!upper: the string holds bytes that are not UTF-8`}, {`upper(s)`, `{}`, `!upper: the value is null`},
	{`lower(s)`, `{"s":"ÀÉ"}`, `"àé"`}, {`lower(s)`, `{"s":[]}`, `!lower:`},
	{`title(s)`, `{"s":"ünïcode words"}`, `"Ünïcode Words"`}, {`title(s)`, `{"s":true}`, `!title:`},
	{`capitalize(s)`, `{"s":""}`, `""`}, {`capitalize(s)`, `{"s":2}`, `!capitalize:`},
	{`snake_case(s)`, `{"s":"HTTPServerID"}`, `"http_server_id"`}, {`snake_case(s)`, `{"s":""}`, `""`}, {`snake_case(s)`, `{}`, `!snake_case:`},
	{`kebab_case(s)`, `{"s":"a b_c"}`, `"a-b-c"`}, {`kebab_case(s)`, `{"s":1}`, `!kebab_case:`},
	{`camel_case(s)`, `{"s":"Élan vital"}`, `"élanVital"`}, {`camel_case(s)`, `{"s":1}`, `!camel_case:`},
	{`trim(s)`, `{"s":"\t é \n"}`, `"é"`}, {`trim(s, "xy")`, `{"s":"xxayy"}`, `"a"`}, {`trim(s)`, `{"s":1}`, `!trim:`},
	{`trim_left(s)`, `{"s":"  a "}`, `"a "`}, {`trim_left(s, "-")`, `{"s":1}`, `!trim_left:`},
	{`trim_right(s)`, `{"s":" a  "}`, `" a"`}, {`trim_right(s)`, `{}`, `!trim_right:`},
	{`trim_prefix(s, "é")`, `{"s":"éa"}`, `"a"`}, {`trim_prefix(s, "x")`, `{"s":""}`, `""`}, {`trim_prefix(s, "x")`, `{"s":1}`, `!trim_prefix:`},
	{`trim_suffix(s, ".gz")`, `{"s":"a.gz"}`, `"a"`}, {`trim_suffix(s, "x")`, `{}`, `!trim_suffix:`},
	{`has_prefix(s, "")`, `{"s":""}`, `true`}, {`has_prefix(s, "a")`, `{"s":1}`, `!has_prefix:`},
	{`has_suffix(s, "é")`, `{"s":"café"}`, `true`}, {`has_suffix(s, "a")`, `{"s":1}`, `!has_suffix:`},
	{`contains(s, "")`, `{"s":""}`, `true`}, {`contains(s, "a")`, `{"s":1}`, `!contains:`},
	{`index_of(s, "x")`, `{"s":"ééx"}`, `2`}, {`index_of(s, "z")`, `{"s":""}`, `-1`}, {`index_of(s, "a")`, `{"s":1}`, `!index_of:`},
	{`last_index_of(s, "é")`, `{"s":"éaé"}`, `2`}, {`last_index_of(s, "a")`, `{}`, `!last_index_of:`},
	{`substr(s, -2)`, `{"s":"日本語"}`, `"本語"`}, {`substr(s, 5, 9)`, `{"s":"abc"}`, `""`}, {`substr(s, 2, 1)`, `{"s":"abc"}`, `""`}, {`substr(s, "a")`, `{"s":"abc"}`, `!substr: start must be number, not string`},
	{`truncate(s, 2)`, `{"s":"日本語"}`, `"日本"`}, {`truncate(s, 9)`, `{"s":""}`, `""`}, {`truncate(s, -1)`, `{"s":"a"}`, `!truncate: n must be 0 or more`},
	{`pad_left(s, 3, "é")`, `{"s":"a"}`, `"ééa"`}, {`pad_left(s, 1)`, `{"s":"abc"}`, `"abc"`}, {`pad_left(s, 3, "")`, `{"s":"a"}`, `!pad_left: the pad string is empty`},
	{`pad_right(s, 4, "ab")`, `{"s":"x"}`, `"xaba"`}, {`pad_right(s, 99999999999)`, `{"s":"x"}`, `!pad_right: width`},
	{`repeat(s, 0)`, `{"s":"ab"}`, `""`}, {`repeat(s, 2)`, `{"s":"é"}`, `"éé"`}, {`repeat(s, 99999999999)`, `{"s":"ab"}`, `!repeat:`}, {`repeat(s, -1)`, `{"s":"a"}`, `!repeat: n must be 0 or more`},
	{`replace(s, "a", "")`, `{"s":"banana"}`, `"bnn"`}, {`replace(s, "a", "b")`, `{"s":1}`, `!replace:`},
	{`split(s, ",")`, `{"s":""}`, `[]`}, {`split(s, "")`, `{"s":"日本"}`, `["日", "本"]`}, {`split(s, ",", 2)`, `{"s":"a,b,c"}`, `["a", "b,c"]`}, {`split(s, ",")`, `{"s":1}`, `!split:`},
	{`join(xs, ", ")`, `{"xs":[]}`, `""`}, {`join(xs)`, `{"xs":["a",null,1.50]}`, `"a1.50"`}, {`join(xs)`, `{"xs":[{}]}`, `!join: element 0 is object`}, {`join(xs)`, `{"xs":"a"}`, `!join:`},
	{`reverse(s)`, `{"s":"añb"}`, `"bña"`}, {`reverse(s)`, `{"s":[1,2]}`, `[2, 1]`}, {`reverse(s)`, `{"s":""}`, `""`}, {`reverse(s)`, `{"s":1}`, `!reverse:`},
	{`format("%5s|%-3d|%03d", "é", 7, -4)`, `{}`, `"    é|7  |-04"`}, {`format("%.1f", x)`, `{"x":0.25}`, `"0.3"`}, {`format("%x %X", 255, "hi")`, `{}`, `"ff 6869"`},
	{`format("%d", x)`, `{"x":"a"}`, `!format: %d's argument must be an integer`}, {`format("%s %s", 1)`, `{}`, `!format: %s has no argument`}, {`format("%y", 1)`, `{}`, `!format: unknown verb %y`},
	// regex
	{"regex_match(s, `^\\p{L}+$`)", `{"s":"Ünï"}`, `true`}, {"regex_match(s, `a`)", `{"s":""}`, `false`}, {"regex_match(s, `a`)", `{"s":1}`, `!regex_match:`},
	{"regex_find(s, `\\d+`)", `{"s":"no digits"}`, `null`}, {"regex_find(s, `.`)", `{"s":"é"}`, `"é"`}, {"regex_find(s, `a`)", `{}`, `!regex_find: the value is null`},
	{"regex_find_all(s, `\\d`, 2)", `{"s":"1a2b3"}`, `["1", "2"]`}, {"regex_find_all(s, `x`)", `{"s":""}`, `[]`}, {"regex_find_all(s, `x`)", `{"s":1}`, `!regex_find_all:`},
	{"regex_capture(s, `(?P<a>x)?(?P<b>y)`)", `{"s":"y"}`, `{"a": null, "b": "y"}`}, {"regex_capture(s, `(?P<a>x)`)", `{"s":2}`, `!regex_capture:`},
	{"regex_replace(s, `(?P<w>\\w+)`, \"<${w}>\")", `{"s":"a b"}`, `"<a> <b>"`}, {"regex_replace(s, `x`, 1 + 1)", `{"s":"x"}`, `!regex_replace:`}, {"regex_replace(s, `x`, \"\")", `{"s":""}`, `""`},
	{"regex_split(s, `\\s+`)", `{"s":"a  b"}`, `["a", "b"]`}, {"regex_split(s, `x`)", `{"s":1}`, `!regex_split:`},
	// hashing
	{`md5(s)`, `{"s":""}`, `"d41d8cd98f00b204e9800998ecf8427e"`}, {`md5(s)`, `{"s":1}`, `!md5: 1 is int, not a string`},
	{`sha1(s)`, `{"s":""}`, `"da39a3ee5e6b4b0d3255bfef95601890afd80709"`}, {`sha1(s)`, `{}`, `!sha1:`},
	{`sha256(s)`, `{"s":""}`, `"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`}, {`sha256(s)`, `{"s":[1]}`, `!sha256:`},
	{`sha512(s)`, `{"s":""}`, `sha512("")`}, {`sha512(s)`, `{"s":1}`, `!sha512:`},
	{`hmac_sha256(s, "")`, `{"s":""}`, `"b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"`}, {`hmac_sha256(s, "k")`, `{"s":1}`, `!hmac_sha256:`},
	{`xxhash64(s)`, `{"s":""}`, `"ef46db3751d8e999"`}, {`xxhash64(s)`, `{"s":1}`, `!xxhash64:`},
	{`crc32(s)`, `{"s":""}`, `0`}, {`crc32(s)`, `{"s":1}`, `!crc32:`},
	{`fnv32(s)`, `{"s":""}`, `2166136261`}, {`fnv32(s)`, `{"s":1}`, `!fnv32:`},
	{`fnv64(s)`, `{"s":""}`, `"cbf29ce484222325"`}, {`fnv64(s)`, `{"s":1}`, `!fnv64:`},
	// encoding
	{`hex_encode(s)`, `{"s":""}`, `""`}, {`hex_encode(s)`, `{"s":"é"}`, `"c3a9"`}, {`hex_encode(s)`, `{"s":1}`, `!hex_encode:`},
	{`hex_decode(s)`, `{"s":"c3a9"}`, `"é"`}, {`hex_decode(s)`, `{"s":"zz"}`, `!hex_decode:`},
	{`base64_encode(s, "raw_url")`, `{"s":"\u00ff\u00fe"}`, `"w7_Dvg"`}, {`base64_encode(s)`, `{"s":""}`, `""`}, {`base64_encode(s)`, `{"s":1}`, `!base64_encode:`},
	{`base64_decode(s, "raw_std")`, `{"s":"w7/Dvg"}`, `"ÿþ"`}, {`base64_decode(s)`, `{"s":"!!"}`, `!base64_decode: "!!" is not std base64`},
	{`url_escape(s)`, `{"s":"é &"}`, `"%C3%A9+%26"`}, {`url_escape(s)`, `{"s":1}`, `!url_escape:`},
	{`url_unescape(s)`, `{"s":"%C3%A9+"}`, `"é "`}, {`url_unescape(s)`, `{"s":"%zz"}`, `!url_unescape:`},
	{`url_path_escape(s)`, `{"s":""}`, `""`}, {`url_path_escape(s)`, `{"s":1}`, `!url_path_escape:`},
	{`html_escape(s)`, `{"s":"é<"}`, `"é&lt;"`}, {`html_escape(s)`, `{"s":1}`, `!html_escape:`},
	{`html_unescape(s)`, `{"s":"&eacute;&amp"}`, `"é&"`}, {`html_unescape(s)`, `{"s":1}`, `!html_unescape:`},
	// ids
	{`regex_match(uuid_v4(), "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")`, `{}`, `true`}, {`uuid_v4() != uuid_v4()`, `{}`, `true`}, {`uuid_v4(1)`, `{}`, `!compile`},
	{`regex_match(uuid_v7(), "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")`, `{}`, `true`}, {`uuid_v7(1)`, `{}`, `!compile`},
	{`regex_match(ulid(), "^[0-9A-HJKMNP-TV-Z]{26}$")`, `{}`, `true`}, {`ulid(1)`, `{}`, `!compile`},
	// time
	{`now() > parse_time("2026-01-01T00:00:00Z")`, `{}`, `true`}, {`now(1)`, `{}`, `!compile`},
	{`to_unix(parse_time(s))`, `{"s":"1970-01-01T00:00:01+01:00"}`, `-3599`}, {`to_unix(parse_time(s, "unix_ms"), "ms")`, `{"s":"-5"}`, `-5`}, {`parse_time(s, "%Y")`, `{"s":"x"}`, `!parse_time: "x" is not a time of layout %Y`},
	{`parse_time(s)`, `{}`, `!parse_time: the value is null`}, {`format_time(parse_time(s, "%d %b %Y"), "%j")`, `{"s":"29 feb 2024"}`, `"060"`}, {`parse_time(s, "%d %b %Y")`, `{"s":"30 feb 2024"}`, `!parse_time:`},
	{`format_time(parse_time(s, "%I:%M %p"), "%H:%M")`, `{"s":"12:30 AM"}`, `"00:30"`}, {`format_time(parse_time(s, "%s.%f"), "%FT%T.%L%z")`, `{"s":"1.5"}`, `"1970-01-01T00:00:01.500+0000"`},
	{`format_time(s)`, `{"s":"2026"}`, `!format_time: "2026" is a string, not a time`}, {`format_time(parse_time(s, "%Y-%m-%d %H:%M:%S %z"), "%:z %Z")`, `{"s":"2026-01-02 03:04:05 -0330"}`, `"-03:30 "`},
	{`to_unix(s)`, `{"s":1}`, `!to_unix: 1 is int, not a time`}, {`from_unix(n, "ms")`, `{"n":1500}`, `parse_time("1970-01-01T00:00:01.5Z")`}, {`from_unix(n)`, `{"n":"x"}`, `!from_unix:`},
	{`truncate_time(parse_time(s), "week")`, `{"s":"2026-02-05T13:47:12Z"}`, `parse_time("2026-02-02T00:00:00Z")`}, {`truncate_time(s, "day")`, `{"s":1}`, `!truncate_time:`},
	{`round_time(parse_time(s), "15m")`, `{"s":"2026-02-05T13:52:29Z"}`, `parse_time("2026-02-05T13:45:00Z")`}, {`round_time(parse_time(s), "15m")`, `{"s":"2026-02-05T13:52:30Z"}`, `parse_time("2026-02-05T14:00:00Z")`}, {`round_time(s, "1h")`, `{}`, `!round_time: the value is null`},
	{`time_diff(parse_time(a), parse_time(b), "d")`, `{"a":"2026-03-01T00:00:00Z","b":"2026-02-01T00:00:00Z"}`, `28`}, {`time_diff(a, b)`, `{"a":1,"b":2}`, `!time_diff:`},
	{`format_time(in_zone(parse_time(s), "Asia/Tokyo"), "%H")`, `{"s":"2026-01-01T00:00:00Z"}`, `"09"`}, {`in_zone(s, "UTC")`, `{"s":"x"}`, `!in_zone:`},
	{`duration(s) * 2`, `{"s":"1m30s"}`, `duration("3m")`}, {`duration(s)`, `{"s":"1 hour"}`, `!duration: "1 hour" is not a duration`},
	{`year(parse_time(s))`, `{"s":"0001-01-01T00:00:00Z"}`, `1`}, {`year(s)`, `{"s":1}`, `!year:`},
	{`month(parse_time(s))`, `{"s":"2026-12-31T23:59:59Z"}`, `12`}, {`month(s)`, `{}`, `!month:`},
	{`day(parse_time(s))`, `{"s":"2026-12-31T23:59:59Z"}`, `31`}, {`day(s)`, `{"s":1}`, `!day:`},
	{`hour(parse_time(s))`, `{"s":"2026-12-31T23:59:59-01:00"}`, `23`}, {`hour(s)`, `{"s":1}`, `!hour:`},
	{`minute(parse_time(s))`, `{"s":"2026-12-31T23:59:59Z"}`, `59`}, {`minute(s)`, `{"s":1}`, `!minute:`},
	{`second(parse_time(s))`, `{"s":"2026-12-31T23:59:59Z"}`, `59`}, {`second(s)`, `{"s":1}`, `!second:`},
	{`weekday(parse_time(s))`, `{"s":"2026-02-07T00:00:00Z"}`, `6`}, {`weekday(s)`, `{"s":1}`, `!weekday:`},
	// parsing
	{`parse_json(s)`, `{"s":"[1e400, \"\\u00e9\"]"}`, `[1e400, "é"]`}, {`parse_json(s)`, `{"s":""}`, `!parse_json:`}, {`parse_json(s)`, `{"s":"{"}`, `!parse_json: "{" is not JSON`},
	{`to_json(x)`, `{"x":{"a":[1.50,"é"]}}`, `"{\"a\":[1.50,\"é\"]}"`}, {`to_json(x)`, `{}`, `"null"`}, {`to_json(1, 2)`, `{}`, `!compile`},
	{`parse_csv(s)`, `{"s":""}`, `[]`}, {`parse_csv(s, ";")`, `{"s":"é;\"a;b\""}`, `["é", "a;b"]`}, {`parse_csv(s)`, `{"s":"a,\"b"}`, `!parse_csv:`}, {`parse_csv(s)`, `{"s":"a\nb"}`, `!parse_csv: "a\nb" holds more than one line`},
	{`parse_url(s).host`, `{"s":"http://[::1]:80/é?q"}`, `"::1"`}, {`parse_url(s).query`, `{"s":"/p"}`, `{}`}, {`parse_url(s)`, `{"s":"http://a b"}`, `!parse_url:`},
	{`parse_query(s)`, `{"s":""}`, `{}`}, {`parse_query(s)`, `{"s":"?a=%C3%A9"}`, `{"a": "é"}`}, {`parse_query(s)`, `{"s":"a=%zz"}`, `!parse_query:`},
	{`parse_kv(s)`, `{"s":""}`, `{}`}, {`parse_kv(s, ",", ":")`, `{"s":"a:1, b:\"x,y\""}`, `{"a": "1", "b": "x,y"}`}, {`parse_kv(s)`, `{"s":"novalue"}`, `!parse_kv:`}, {`parse_kv(s)`, `{"s":"a=\"open"}`, `!parse_kv: "a=\"open": a quote is not closed`},
	// numbers
	{`parse_int(s)`, `{"s":" -42 "}`, `-42`}, {`parse_int(s, 0)`, `{"s":"0x1F"}`, `31`}, {`parse_int(s)`, `{"s":"99999999999999999999"}`, `!parse_int: "99999999999999999999" is beyond int64`}, {`parse_int(s)`, `{"s":""}`, `!parse_int:`},
	{`string(parse_number(s))`, `{"s":"1.50"}`, `"1.50"`}, {`parse_number(s)`, `{"s":"0x1"}`, `!parse_number:`}, {`parse_number(s)`, `{"s":""}`, `!parse_number:`},
	{`round(x, 1)`, `{"x":0.05}`, `0.1`}, {`round(x)`, `{"x":12345678901234567890.5}`, `12345678901234567891`}, {`round(x, 2)`, `{"x":-0.001}`, `0.00`}, {`round(x)`, `{"x":"1"}`, `!round: "1" is not a number`},
	{`floor(x)`, `{"x":-0.5}`, `-1`}, {`floor(x)`, `{"x":1e30}`, `!floor: 1e30 is beyond int64`}, {`floor(x)`, `{}`, `!floor:`},
	{`ceil(x)`, `{"x":-0.5}`, `0`}, {`ceil(x)`, `{"x":"a"}`, `!ceil:`},
	{`abs(x)`, `{"x":-12345678901234567891}`, `12345678901234567891`}, {`abs(x)`, `{"x":"1"}`, `!abs:`},
	{`min(xs)`, `{"xs":["b","a"]}`, `"a"`}, {`min(1, "a")`, `{}`, `!mismatched`}, {`min(xs)`, `{"xs":[]}`, `!min: of nothing`},
	{`max(9007199254740993, 9007199254740992.0)`, `{}`, `9007199254740993`}, {`max(xs)`, `{"xs":[]}`, `!max:`},
	{`clamp(x, 1, 3)`, `{"x":-1}`, `1`}, {`clamp(x, 3, 1)`, `{"x":2}`, `!clamp: lo 3 is above hi 1`},
	{`format_number(x)`, `{"x":-1234567}`, `"-1,234,567"`}, {`format_number(x, 1, " ")`, `{"x":999.96}`, `"1 000.0"`}, {`format_number(x)`, `{"x":1e3}`, `!format_number: 1e3 has an exponent`}, {`format_number(x)`, `{"x":"1"}`, `!format_number:`},
	// collections
	{`len(s)`, `{"s":"日本"}`, `2`}, {`len(s)`, `{"s":{}}`, `0`}, {`len(s)`, `{"s":1}`, `!len: 1 has no length`},
	{`keys(o)`, `{"o":{}}`, `[]`}, {`keys(o)`, `{"o":[]}`, `!keys: an array is array, not an object`},
	{`values(o)`, `{"o":{"é":1}}`, `[1]`}, {`values(o)`, `{}`, `!values:`},
	{`all(xs, # > 0)`, `{"xs":[]}`, `true`}, {`all(xs)`, `{"xs":[true, 1]}`, `!all: the predicate gave 1, not a bool`}, {`all(xs, # > 0)`, `{"xs":1}`, `!all: 1 is int, not an array`},
	{`any(xs, # > 0)`, `{"xs":[]}`, `false`}, {`any(xs, # > 0)`, `{}`, `!any: the value is null`},
	{`none(xs, # == "é")`, `{"xs":["é"]}`, `false`}, {`none(xs, #)`, `{"xs":[1]}`, `!none:`},
	{`one(xs, # > 1)`, `{"xs":[2, 3]}`, `false`}, {`one(xs, #)`, `{"xs":"x"}`, `!one:`},
	{`count(xs, # != null)`, `{"xs":[null, 1]}`, `1`}, {`count(xs, #)`, `{"xs":[1]}`, `!count:`},
	{`filter(o, #key != "b")`, `{"o":{"a":1,"b":2}}`, `{"a": 1}`}, {`filter(xs, #index > 0)`, `{"xs":[]}`, `[]`}, {`filter(xs, #)`, `{"xs":[2]}`, `!filter:`},
	{`map(xs, #index)`, `{"xs":["a","b"]}`, `[0, 1]`}, {`map(xs, # + 1)`, `{"xs":{}}`, `!map: an object is object, not an array`},
	{`map_values(o, upper(#))`, `{"o":{"a":"é"}}`, `{"a": "É"}`}, {`map_values(o, #)`, `{"o":[1]}`, `!map_values:`},
	{`find(xs, # > 1)`, `{"xs":[]}`, `null`}, {`find(xs, #)`, `{"xs":[3]}`, `!find:`},
	{`find_index(xs, # == "b")`, `{"xs":["a"]}`, `-1`}, {`find_index(xs, #)`, `{"xs":"s"}`, `!find_index:`},
	{`sum(xs)`, `{"xs":[]}`, `0`}, {`sum(xs)`, `{"xs":[9223372036854775807, 1]}`, `!integer overflow`}, {`sum(xs)`, `{"xs":[0.5, 1]}`, `1.5`},
	{`reduce(xs, #acc + #)`, `{"xs":["a","b"]}`, `"ab"`}, {`reduce(xs, #acc + #)`, `{"xs":[]}`, `!reduce: of an empty array`},
	{`group_by(xs, #.k)`, `{"xs":[]}`, `{}`}, {`group_by(xs, #.k)`, `{"xs":[{"k":null}]}`, `!group_by: the key`},
	{`sort_by(xs, -#)`, `{"xs":[1, 3, 2]}`, `[3, 2, 1]`}, {`sort_by(xs, #)`, `{"xs":[1, "a"]}`, `!mismatched`},
	{`sort(xs)`, `{"xs":["é", "e", "f"]}`, `["e", "f", "é"]`}, {`sort(xs)`, `{"xs":[]}`, `[]`}, {`sort(xs)`, `{"xs":[1, "a"]}`, `!mismatched`}, {`sort(xs)`, `{"xs":1}`, `!sort:`},
	{`unique(xs)`, `{"xs":[]}`, `[]`}, {`unique(xs)`, `{"xs":[{"a":1},{"a":1.0}]}`, `[{"a": 1}]`}, {`unique(xs)`, `{"xs":"a"}`, `!unique:`},
	{`flatten(xs, 1)`, `{"xs":[[1,[2]],3]}`, `[1, [2], 3]`}, {`flatten(xs)`, `{"xs":{}}`, `!flatten:`},
	{`first(xs)`, `{"xs":[]}`, `null`}, {`first(xs)`, `{"xs":"s"}`, `!first:`},
	{`last(xs)`, `{"xs":[]}`, `null`}, {`last(xs)`, `{}`, `!last:`},
	{`merge(a, b)`, `{"a":{"x":{"y":1}},"b":{"x":2}}`, `{"x": 2}`}, {`merge(a, b)`, `{"a":{},"b":[]}`, `!merge:`},
	{`without(o, "é")`, `{"o":{"é":1,"a":2}}`, `{"a": 2}`}, {`without(o, 1)`, `{"o":{}}`, `!compile`}, {`without(o, xs)`, `{"o":{},"xs":[1]}`, `!without: a member name must be a string`},
	{`pick(o, [])`, `{"o":{"a":1}}`, `{}`}, {`pick(o, "a")`, `{"o":1}`, `!pick:`},
	{`compact(xs)`, `{"xs":[null, [null]]}`, `[[]]`}, {`compact(xs)`, `{"xs":"s"}`, `!compact:`},
	// control
	{`try(parse_json(s), {})`, `{"s":"{"}`, `{}`}, {`try(x.y)`, `{"x":null}`, `null`}, {`try(drop(), 1)`, `{}`, `!dropped`},
	{`error("bad: " + s)`, `{"s":"é"}`, `!bad: é`}, {`error(1)`, `{}`, `!compile`},
	{`drop()`, `{}`, `!dropped`}, {`drop(1)`, `{}`, `!compile`},
	{`coalesce(a, b)`, `{}`, `null`}, {`coalesce(a, b)`, `{"b":"é"}`, `"é"`}, {`coalesce()`, `{}`, `null`}, {`coalesce(x.y)`, `{"x":1}`, `!cannot read .y of 1`},
	// conversions
	{`int(s)`, `{"s":" 7 "}`, `7`}, {`int(s)`, `{"s":"٣"}`, `!int: the string "٣" is not an integer`}, {`int(s)`, `{"s":[]}`, `!int:`},
	{`float(s)`, `{"s":"1e2"}`, `100`}, {`float(s)`, `{"s":"9007199254740993"}`, `!float:`}, {`float(s)`, `{"s":"x"}`, `!float: the string "x" is not a number`},
	{`string(x)`, `{"x":-0}`, `"-0"`}, {`string(x)`, `{"x":"é"}`, `"é"`}, {`string(x)`, `{}`, `!string: the value is null`},
	{`bool(s)`, `{"s":"false"}`, `false`}, {`bool(s)`, `{"s":"yes"}`, `!bool: "yes" is not true or false`},
	{`type(x)`, `{"x":1e3}`, `"float"`}, {`type(x)`, `{}`, `"null"`}, {`type()`, `{}`, `!compile`},
	{`is_null(x)`, `{"x":0}`, `false`}, {`is_null(x, 1)`, `{}`, `!compile`},
}

func TestFunctionCases(t *testing.T) {
	for _, c := range funcCases {
		got, err := evalOn(t, c.src, c.value)
		want, isErr := strings.CutPrefix(c.want, "!")
		switch {
		case isErr && want == "compile":
			if _, cerr := Compile(c.src, Options{}); cerr == nil {
				t.Errorf("%s compiles; want a load error", c.src)
			}
		case isErr && want == "dropped":
			if err != ErrDrop {
				t.Errorf("%s on %s: %v, want a drop", c.src, c.value, err)
			}
		case isErr:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s on %s = %s, %v; want an error containing %q", c.src, c.value, got.AppendJSON(nil), err, want)
			}
		case err != nil:
			t.Errorf("%s on %s: %v", c.src, c.value, err)
		default:
			w, werr := evalOn(t, want, `{}`)
			if werr != nil {
				t.Fatalf("want %s: %v", want, werr)
			}
			if !same(got, w) && !(got.Kind() == record.Time && w.Kind() == record.Time && got.Time().Equal(w.Time())) {
				t.Errorf("%s on %s = %s, want %s", c.src, c.value, got.AppendJSON(nil), w.AppendJSON(nil))
			}
		}
	}
}

// Every function has cases, and one of them is invalid input giving a
// record error that names the function (or, for those of no argument, a
// load error).
func TestEveryFunctionHasCases(t *testing.T) {
	for _, f := range Functions() {
		n, named := 0, false
		for _, c := range funcCases {
			if !strings.Contains(c.src, f.Name+"(") {
				continue
			}
			n++
			if strings.HasPrefix(c.want, "!"+f.Name+":") || c.want == "!compile" || c.want == "!dropped" ||
				strings.HasPrefix(c.src, f.Name+"(") && strings.HasPrefix(c.want, "!") {
				named = true
			}
		}
		if n < 2 || !named {
			t.Errorf("%s has %d cases, with an error case: %v", f.Name, n, named)
		}
	}
}
