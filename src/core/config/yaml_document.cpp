// Loading the config text: exactly one YAML document, no NUL byte, syntax
// errors with their place.
#include "vaultgate/config/yaml_reader.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <sstream>

namespace vaultgate::yaml {

namespace {

// Records, per document, whether it was nothing but one null and where.
class DocumentCounter : public YAML::EventHandler {
public:
    struct Doc {
        YAML::Mark start;
        YAML::Mark null_at;
        int events = 0;
        bool only_null = false;
    };
    Doc current;
    // The first string (key, value or tag) holding a NUL byte, which "\0" and
    // "\x00" put there: the paths, names and headers it ends up in would be
    // cut short at it by the C APIs that take them.
    std::optional<YAML::Mark> nul_at;

    void OnDocumentStart(const YAML::Mark& m) override { current = Doc{m, YAML::Mark::null_mark(), 0, false}; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& m, YAML::anchor_t) override {
        if (current.events++ == 0) {
            current.only_null = true;
            current.null_at = m;
        }
    }
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { seen(); }
    void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, const std::string& value) override {
        seen();
        check_nul(m, tag);
        check_nul(m, value);
    }
    void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
        seen();
        check_nul(m, tag);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, YAML::EmitterStyle::value) override {
        seen();
        check_nul(m, tag);
    }
    void OnMapEnd() override {}

private:
    void seen() {
        ++current.events;
        current.only_null = false;
    }
    void check_nul(const YAML::Mark& m, const std::string& text) {
        if (!nul_at && text.find('\0') != std::string::npos) nul_at = m;
    }
};

// A NUL byte written raw into the file, which yaml-cpp would not refuse.
void check_no_raw_nul(const std::string& text, const Reader& reader) {
    const auto nul = text.find('\0');
    if (nul == std::string::npos) return;
    YAML::Mark at;
    at.pos = static_cast<int>(nul);
    const auto line_start = text.rfind('\n', nul);
    at.line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
    at.column = static_cast<int>(line_start == std::string::npos ? nul : nul - line_start - 1);
    reader.fail(at, "", "the file holds a NUL byte; no setting may contain one");
}

// One document per file. yaml-cpp 0.7 has a parser bug: a token no rule
// consumes (a ',' outside a flow collection) yields an empty document without
// advancing, forever. Two null-only documents at the same position are that
// bug, reported here as the syntax error it is; the number of documents read
// is bounded, so the loop cannot run away. The same pass finds the first
// string holding a NUL byte.
void check_single_document(const std::string& text, const Reader& reader) {
    std::istringstream in(text);
    YAML::Parser yaml(in);
    DocumentCounter counter;
    std::vector<DocumentCounter::Doc> docs;
    while (docs.size() < 3 && yaml.HandleNextDocument(counter)) {
        docs.push_back(counter.current);
        const auto n = docs.size();
        if (n < 2) continue;
        const auto& prev = docs[n - 2];
        const auto& doc = docs[n - 1];
        if (prev.only_null && doc.only_null && prev.null_at.pos == doc.null_at.pos) {
            const auto pos = static_cast<std::size_t>(doc.null_at.pos);
            const std::string what = pos < text.size() ? " " + shown(text.substr(pos, 1)) : std::string();
            reader.fail(doc.null_at, "", "YAML syntax error: unexpected character" + what);
        }
        // A second document that is one null may still be the stuck parser;
        // one more read tells.
        if (!doc.only_null || n == 3) reader.fail(docs[1].start, "", "only one YAML document is allowed");
    }
    if (docs.size() == 2) reader.fail(docs[1].start, "", "only one YAML document is allowed");
    if (counter.nul_at)
        reader.fail(*counter.nul_at, "", "a key or value holds a NUL byte (\\0 or \\x00); no setting may contain one");
}

}  // namespace

Value Reader::load(const std::string& text) const {
    YAML::Node root;
    try {
        // Counted first: the count also catches the inputs yaml-cpp accepts as
        // an empty document (a stray ',') and that LoadAll would loop on.
        check_no_raw_nul(text, *this);
        check_single_document(text, *this);
        root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
        fail(e.mark, "", "YAML syntax error: " + e.msg);
    } catch (const YAML::Exception& e) {
        fail(e.mark, "", "cannot parse YAML: " + e.msg);
    }
    return Value(*this, root, "");
}

}  // namespace vaultgate::yaml
