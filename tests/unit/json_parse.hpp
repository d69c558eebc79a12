// A strict, minimal JSON parser for the tests only: it checks that text the
// project prints is valid JSON (RFC 8259) and gives the values back so tests
// can read fields. Independent of topo/json_writer on purpose.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputopo_test {

struct JsonValue {
    enum Type { Null, Bool, Number, String, Array, Object } type = Null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<JsonValue> arr;
    std::vector<std::pair<std::string, JsonValue>> obj;  // in document order

    const JsonValue& operator[](const std::string& key) const {
        if (type != Object) throw std::runtime_error("not an object (looking up '" + key + "')");
        for (const auto& kv : obj)
            if (kv.first == key) return kv.second;
        throw std::runtime_error("no key '" + key + "'");
    }
    const JsonValue& operator[](size_t i) const {
        if (type != Array || i >= arr.size()) throw std::runtime_error("no array element " + std::to_string(i));
        return arr[i];
    }
    bool has(const std::string& key) const {
        if (type != Object) return false;
        for (const auto& kv : obj)
            if (kv.first == key) return true;
        return false;
    }
    std::vector<std::string> keys() const {
        std::vector<std::string> k;
        for (const auto& kv : obj) k.push_back(kv.first);
        return k;
    }
    std::vector<std::string> strings() const {
        std::vector<std::string> v;
        for (const auto& e : arr) {
            if (e.type != String) throw std::runtime_error("array element is not a string");
            v.push_back(e.str);
        }
        return v;
    }
    std::vector<int> ints() const {
        std::vector<int> v;
        for (const auto& e : arr) {
            if (e.type != Number) throw std::runtime_error("array element is not a number");
            v.push_back(static_cast<int>(e.num));
        }
        return v;
    }
};

class JsonParser {
public:
    // Throws std::runtime_error with the byte offset on invalid JSON.
    static JsonValue parse(const std::string& text) {
        JsonParser p(text);
        p.ws();
        JsonValue v = p.value(0);
        p.ws();
        if (p.i_ != p.s_.size()) p.fail("trailing characters");
        return v;
    }

private:
    explicit JsonParser(const std::string& s) : s_(s) {}
    const std::string& s_;
    size_t i_ = 0;

    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error("invalid JSON at byte " + std::to_string(i_) + ": " + why);
    }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    bool eat(char c) {
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void expect_word(const char* w) {
        for (const char* p = w; *p; ++p)
            if (!eat(*p)) fail(std::string("expected '") + w + "'");
    }
    JsonValue value(int depth) {
        if (depth > 64) fail("nesting too deep");
        if (i_ >= s_.size()) fail("unexpected end");
        JsonValue v;
        char c = s_[i_];
        if (c == '{') {
            ++i_;
            v.type = JsonValue::Object;
            ws();
            if (eat('}')) return v;
            for (;;) {
                ws();
                if (i_ >= s_.size() || s_[i_] != '"') fail("expected a key");
                std::string k = string();
                ws();
                if (!eat(':')) fail("expected ':'");
                ws();
                for (const auto& kv : v.obj)
                    if (kv.first == k) fail("duplicate key '" + k + "'");
                v.obj.emplace_back(k, value(depth + 1));
                ws();
                if (eat('}')) return v;
                if (!eat(',')) fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            ++i_;
            v.type = JsonValue::Array;
            ws();
            if (eat(']')) return v;
            for (;;) {
                ws();
                v.arr.push_back(value(depth + 1));
                ws();
                if (eat(']')) return v;
                if (!eat(',')) fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.type = JsonValue::String;
            v.str = string();
            return v;
        }
        if (c == 't') { expect_word("true"); v.type = JsonValue::Bool; v.b = true; return v; }
        if (c == 'f') { expect_word("false"); v.type = JsonValue::Bool; return v; }
        if (c == 'n') { expect_word("null"); return v; }
        return number();
    }
    static bool digit(char c) { return c >= '0' && c <= '9'; }
    JsonValue number() {
        size_t start = i_;
        eat('-');
        if (eat('0')) {
        } else if (i_ < s_.size() && digit(s_[i_]) ) {
            while (i_ < s_.size() && digit(s_[i_])) ++i_;
        } else {
            fail("expected a value");
        }
        if (eat('.')) {
            if (i_ >= s_.size() || !digit(s_[i_])) fail("expected a digit after '.'");
            while (i_ < s_.size() && digit(s_[i_])) ++i_;
        }
        if (eat('e') || eat('E')) {
            if (!eat('+')) eat('-');
            if (i_ >= s_.size() || !digit(s_[i_])) fail("expected an exponent");
            while (i_ < s_.size() && digit(s_[i_])) ++i_;
        }
        JsonValue v;
        v.type = JsonValue::Number;
        v.num = std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
        return v;
    }
    unsigned hex4() {
        if (i_ + 4 > s_.size()) fail("short \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = s_[i_++];
            v <<= 4;
            if (digit(c)) v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
            else fail("bad hex digit in \\u escape");
        }
        return v;
    }
    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    std::string string() {
        ++i_;  // opening quote
        std::string out;
        for (;;) {
            if (i_ >= s_.size()) fail("unterminated string");
            unsigned char c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') return out;
            if (c < 0x20) fail("raw control character in a string");
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            if (i_ >= s_.size()) fail("unterminated escape");
            char e = s_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (!eat('\\') || !eat('u')) fail("lone high surrogate");
                        unsigned lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        fail("lone low surrogate");
                    }
                    utf8(out, cp);
                    break;
                }
                default: fail(std::string("bad escape '\\") + e + "'");
            }
        }
    }
};

}  // namespace gputopo_test
