// AWS's published Signature Version 4 test suite (aws-sig-v4-test-suite,
// 2015-08-30 edition): each vector's request, canonical request, string to
// sign and Authorization header, used as data. Every case is checked at each
// stage, so a failure says where the difference is, not only that there is one.
#include "vaultgate/signing/sigv4.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vaultgate::sigv4 {
namespace {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

const Scope suite_scope{"us-east-1", "service"};
constexpr std::string_view suite_key_id = "AKIDEXAMPLE";
const Secret suite_secret("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
constexpr std::string_view suite_date = "20150830T123600Z";
const auto suite_time = std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));
constexpr std::string_view empty_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view sts_token =
    "AQoDYXdzEPT//////////"
    "wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/"
    "qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+"
    "xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";

struct Vector {
    std::string name;
    std::string method;
    std::string target;
    HeaderList headers;  // besides Host and X-Amz-Date
    std::string body;
    bool session_token = false;
    std::string canonical;
    std::string string_to_sign;
    std::string signed_headers;
    std::string signature;
};

std::string sts(std::string_view hash) {
    return "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n" + std::string(hash);
}

const std::string plain_headers = "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n";

std::string creq(std::string_view method, std::string_view uri, std::string_view query,
                 std::string_view headers = plain_headers, std::string_view signed_list = "host;x-amz-date",
                 std::string_view payload = empty_hash) {
    return std::string(method) + "\n" + std::string(uri) + "\n" + std::string(query) + "\n" + std::string(headers) +
           "\n" + std::string(signed_list) + "\n" + std::string(payload);
}

// A vector with no headers besides Host and X-Amz-Date and an empty body.
Vector plain(std::string name, std::string method, std::string target, std::string uri, std::string query,
             std::string_view sts_hash, std::string signature) {
    std::string canonical = creq(method, uri, query);
    return {std::move(name), std::move(method), std::move(target),   {}, "", false, std::move(canonical),
            sts(sts_hash),   "host;x-amz-date", std::move(signature)};
}

// A vector with My-Header1 values; `joined` is the suite's canonical value.
Vector my_header1(std::string name, std::string method, std::vector<std::string> values, std::string_view joined,
                  std::string_view sts_hash, std::string signature) {
    HeaderList headers;
    for (auto& value : values) headers.emplace_back("My-Header1", std::move(value));
    std::string canonical =
        creq(method, "/", "",
             "host:example.amazonaws.com\nmy-header1:" + std::string(joined) + "\nx-amz-date:20150830T123600Z\n",
             "host;my-header1;x-amz-date");
    return {std::move(name), std::move(method),    "/",           std::move(headers),           "",
            false,           std::move(canonical), sts(sts_hash), "host;my-header1;x-amz-date", std::move(signature)};
}

// A form POST with the given Content-Type.
Vector form_post(std::string name, std::string content_type, std::string_view sts_hash, std::string signature) {
    const std::string form_hash = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e";
    std::string canonical = creq("POST", "/", "", "content-type:" + content_type + "\n" + plain_headers,
                                 "content-type;host;x-amz-date", form_hash);
    return {std::move(name),
            "POST",
            "/",
            {{"Content-Type", std::move(content_type)}},
            "Param1=value1",
            false,
            std::move(canonical),
            sts(sts_hash),
            "content-type;host;x-amz-date",
            std::move(signature)};
}

const std::vector<Vector>& vectors() {
    static const std::vector<Vector> all = [] {
        const std::string unreserved = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        const std::string vanilla_sts = "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63";
        const std::string vanilla_signature = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
        std::vector<Vector> v;
        v.push_back(plain("get-vanilla", "GET", "/", "/", "", vanilla_sts, vanilla_signature));
        v.push_back(my_header1("get-header-key-duplicate", "GET", {"value2", "value2", "value1"},
                               "value2,value2,value1",
                               "dc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c",
                               "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"));
        v.push_back(my_header1("get-header-value-multiline (folded lines as repeats)", "GET",
                               {"value1", "value2", "value3"}, "value1,value2,value3",
                               "b7b6cbfd8a0430b78891e986784da2630c8a135a8595cec25b26ea94f926ee55",
                               "ba17b383a53190154eb5fa66a1b836cc297cc0a3d70a5d00705980573d8ff790"));
        v.push_back(my_header1("get-header-value-order", "GET", {"value4", "value1", "value3", "value2"},
                               "value4,value1,value3,value2",
                               "31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86",
                               "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"));
        v.push_back({"get-header-value-trim",
                     "GET",
                     "/",
                     {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}},
                     "",
                     false,
                     creq("GET", "/", "",
                          "host:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n"
                          "x-amz-date:20150830T123600Z\n",
                          "host;my-header1;my-header2;x-amz-date"),
                     sts("a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7"),
                     "host;my-header1;my-header2;x-amz-date",
                     "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"});
        v.push_back(plain("get-unreserved", "GET", "/" + unreserved, "/" + unreserved, "",
                          "6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9",
                          "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"));
        v.push_back(plain("get-utf8", "GET", "/\xE1\x88\xB4", "/%E1%88%B4", "",
                          "2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102",
                          "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"));
        v.push_back(plain("get-vanilla-empty-query-key", "GET", "/?Param1=value1", "/", "Param1=value1",
                          "1e24db194ed7d0eec2de28d7369675a243488e08526e8c1c73571282f7c517ab",
                          "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"));
        v.push_back(plain("get-vanilla-query-order-key", "GET", "/?Param1=value2&Param1=Value1", "/",
                          "Param1=Value1&Param1=value2",
                          "704b4cef673542d84cdff252633f065e8daeba5f168b77116f8b1bcaf3d38f89",
                          "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"));
        v.push_back(plain("get-vanilla-query-order-key-case", "GET", "/?Param2=value2&Param1=value1", "/",
                          "Param1=value1&Param2=value2",
                          "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0",
                          "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
        v.push_back(plain("get-vanilla-query-order-value", "GET", "/?Param1=value2&Param1=value1", "/",
                          "Param1=value1&Param1=value2",
                          "c968629d70850097a2d8781c9bf7edcb988b04cac14cca9be4acc3595f884606",
                          "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"));
        v.push_back(plain("get-vanilla-query-unreserved", "GET", "/?" + unreserved + "=" + unreserved, "/",
                          unreserved + "=" + unreserved,
                          "c30d4703d9f799439be92736156d47ccfb2d879ddf56f5befa6d1d6aab979177",
                          "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"));
        v.push_back(plain("get-vanilla-utf8-query", "GET", "/?\xE1\x88\xB4=bar", "/", "%E1%88%B4=bar",
                          "eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073",
                          "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"));
        // normalize-path: get-relative, get-relative-relative, get-slash, get-slash-dot-slash.
        for (const char* path : {"/example/..", "/example1/example2/../..", "//", "/./"})
            v.push_back(
                plain(std::string("normalize-path ") + path, "GET", path, "/", "", vanilla_sts, vanilla_signature));
        v.push_back(plain("normalize-path/get-slash-pointless-dot", "GET", "/./example", "/example", "",
                          "214d50c111a8edc4819da6a636336472c916b5240f51e9a51b5c3305180cf702",
                          "ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5"));
        v.push_back(plain("normalize-path/get-slashes", "GET", "//example//", "/example/", "",
                          "cb96b4ac96d501f7c5c15bc6d67b3035061cfced4af6585ad927f7e6c985c015",
                          "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"));
        v.push_back(plain("normalize-path/get-space", "GET", "/example space/", "/example%20space/", "",
                          "63ee75631ed7234ae61b5f736dfc7754cdccfedbff4b5128a915706ee9390d86",
                          "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"));
        v.push_back(plain("post-vanilla", "POST", "/", "/", "",
                          "553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87",
                          "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"));
        v.push_back(my_header1("post-header-key-sort", "POST", {"value1"}, "value1",
                               "9368318c2967cf6de74404b30c65a91e8f6253e0a8659d6d5319f1a812f87d65",
                               "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"));
        v.push_back(my_header1("post-header-value-case", "POST", {"VALUE1"}, "VALUE1",
                               "d51ced243e649e3de6ef63afbbdcbca03131a21a7103a1583706a64618606a93",
                               "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"));
        v.push_back({"post-sts-token/post-sts-header-before",
                     "POST",
                     "/",
                     {},
                     "",
                     true,
                     creq("POST", "/", "",
                          "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\nx-amz-security-token:" +
                              std::string(sts_token) + "\n",
                          "host;x-amz-date;x-amz-security-token"),
                     sts("c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6"),
                     "host;x-amz-date;x-amz-security-token",
                     "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"});
        v.push_back(plain("post-vanilla-query", "POST", "/?Param1=value1", "/", "Param1=value1",
                          "9d659678c1756bb3113e2ce898845a0a79dbbc57b740555917687f1b3340fbbd",
                          "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"));
        v.push_back(form_post("post-x-www-form-urlencoded", "application/x-www-form-urlencoded",
                              "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281",
                              "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"));
        v.push_back(form_post("post-x-www-form-urlencoded-parameters",
                              "application/x-www-form-urlencoded; charset=utf8",
                              "2e1cf7ed91881a30569e46552437e4156c823447bf1781b921b5d486c568dd1c",
                              "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"));
        return v;
    }();
    return all;
}

std::string expected_authorization(const Vector& v) {
    return "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=" +
           v.signed_headers + ", Signature=" + v.signature;
}

HeaderList suite_headers(const Vector& v) {
    HeaderList h{{"Host", "example.amazonaws.com"}};
    h.insert(h.end(), v.headers.begin(), v.headers.end());
    h.emplace_back("X-Amz-Date", std::string(suite_date));
    if (v.session_token) h.emplace_back("X-Amz-Security-Token", std::string(sts_token));
    return h;
}

TEST(SigV4Vectors, EachStageMatchesTheSuite) {
    for (const Vector& v : vectors()) {
        SCOPED_TRACE(v.name);
        const HeaderList headers = suite_headers(v);
        const std::string canonical =
            canonical_request(v.method, v.target, headers, payload_sha256_hex(v.body), /*s3=*/false);
        EXPECT_EQ(canonical, v.canonical);
        EXPECT_EQ(signed_header_list(headers), v.signed_headers);
        const std::string to_sign = string_to_sign(suite_date, suite_scope, canonical);
        EXPECT_EQ(to_sign, v.string_to_sign);
        const std::string sig = signature(suite_secret, suite_date, suite_scope, to_sign);
        EXPECT_EQ(sig, v.signature);
        EXPECT_EQ(authorization_value(suite_key_id, suite_date, suite_scope, signed_header_list(headers), sig),
                  expected_authorization(v));
    }
}

// The vectors whose headers are all in vaultgate's signed set go through
// sign_request whole: the head it rewrites carries the suite's Authorization.
TEST(SigV4Vectors, SignRequestReproducesTheSuitesAuthorization) {
    const Secret token{std::string(sts_token)};
    int signed_whole = 0;
    for (const Vector& v : vectors()) {
        bool all_in_set = true;
        for (const auto& [name, value] : v.headers) all_in_set = all_in_set && name == "Content-Type";
        if (!all_in_set) continue;
        SCOPED_TRACE(v.name);
        RequestHead head;
        head.method = v.method;
        head.target = v.target;
        head.headers.push_back({"Host", "example.amazonaws.com"});
        for (const auto& [name, value] : v.headers) head.headers.push_back({name, value});
        const Keys keys{suite_key_id, suite_secret, v.session_token ? &token : nullptr};
        sign_request(head, suite_scope, keys, payload_sha256_hex(v.body), suite_time);
        EXPECT_EQ(head.get("authorization").value_or(""), expected_authorization(v));
        EXPECT_EQ(head.get("x-amz-date").value_or(""), suite_date);
        EXPECT_EQ(head.count("x-amz-content-sha256"), 0u);  // not S3: not added
        if (v.session_token) {
            EXPECT_EQ(head.get("x-amz-security-token").value_or(""), sts_token);
        }
        ++signed_whole;
    }
    EXPECT_GE(signed_whole, 20);
}

TEST(SigV4Vectors, AmzDateAndEmptyBodyHash) {
    EXPECT_EQ(amz_date(suite_time), suite_date);
    EXPECT_EQ(payload_sha256_hex(""), empty_hash);
    EXPECT_EQ(payload_sha256_hex("Param1=value1"), "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
    EXPECT_EQ(credential_scope(suite_date, suite_scope), "20150830/us-east-1/service/aws4_request");
}

}  // namespace
}  // namespace vaultgate::sigv4
