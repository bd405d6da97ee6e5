#include "agent/candidate.hpp"

#include "kforge/agent.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge::agent {
namespace {

constexpr std::size_t kMaxSource = 256 * 1024;

std::string quote(const std::string& line) {
  return "'" + (line.size() > 200 ? line.substr(0, 200) + "..." : line) + "'";
}

// A grid or block: a JSON array of expressions (strings or numbers), up to three.
nlohmann::json geometry(const nlohmann::json& v, const char* field) {
  if (!v.is_array() || v.empty() || v.size() > 3)
    throw UsageError(std::string("\"") + field + "\" must be an array of 1 to 3 expressions, e.g. [\"ceil_div(M,16)\"]");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : v) {
    if (e.is_string()) out.push_back(e);
    else if (e.is_number_integer()) out.push_back(std::to_string(e.get<long long>()));
    else throw UsageError(std::string("\"") + field + "\" holds " + e.dump() + ": use expressions as strings");
  }
  return out;
}

void build(Candidate& c, const Problem& p, const std::string& entry) {
  const nlohmann::json& m = c.message;
  nlohmann::json j = m.contains("spec") ? m.at("spec") : nlohmann::json::object();
  if (!j.is_object()) throw UsageError("\"spec\" must be a kernel spec object (docs/agent.md)");
  j["problem"] = p.name();
  j["name"] = "candidate";
  j["lang"] = lang_name(c.lang);
  if (m.contains("entry")) j["entry"] = m.at("entry");
  if (!j.contains("entry")) j["entry"] = entry;
  if (m.contains("grid")) j["grid"] = geometry(m.at("grid"), "grid");
  if (m.contains("block")) j["block"] = geometry(m.at("block"), "block");
  if (!j.contains("dtypes")) {
    j["dtypes"] = nlohmann::json::array();
    for (DType d : p.dtypes()) j["dtypes"].push_back(dtype_name(d));
  }
  c.spec = KernelSpec::from_json_with_source(j, c.source);
  if (!m.contains("params")) return;
  if (!m.at("params").is_object()) throw UsageError("\"params\" must be an object of integers, e.g. {\"BM\": 32}");
  for (const auto& [name, v] : m.at("params").items()) {
    if (!v.is_number_integer()) throw UsageError("parameter " + name + " = " + v.dump() + " is not an integer");
    bool declared = false;
    for (const auto& prm : c.spec.params) declared = declared || prm.name == name;
    // A value for a parameter the spec does not declare becomes a space of one value.
    if (!declared) {
      c.spec.params.push_back({name, {v.get<std::int64_t>()}});
      c.spec.defaults[name] = v.get<std::int64_t>();
    }
    c.params[name] = v.get<std::int64_t>();
  }
}

}  // namespace

Message parse_message(const std::string& line, const Problem& p, Lang lang, const std::string& entry) {
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw ProposerError("the proposer wrote a line that is not JSON: " + quote(line) +
                        " (each line on its stdout must be one JSON message: a candidate or a stop; "
                        "log to stderr instead)");
  }
  if (!m.is_object() || !m.contains("type") || !m.at("type").is_string())
    throw ProposerError("the proposer wrote " + quote(line) + ": a message is an object with \"type\": "
                        "\"candidate\" or \"stop\" (docs/schemas/)");
  const std::string type = m.at("type");
  Message out;
  if (type == "stop") {
    out.stop = true;
    out.reason = m.value("reason", "");
    return out;
  }
  if (type != "candidate")
    throw ProposerError("the proposer sent a message of type '" + type + "': expected candidate or stop");
  if (!m.contains("source") || !m.at("source").is_string())
    throw ProposerError("the proposer sent a candidate without a \"source\" string: " + quote(line));
  Candidate c;
  c.source = m.at("source");
  m.erase("source");
  c.note = m.contains("note") && m.at("note").is_string() ? m.at("note").get<std::string>() : "";
  c.message = m;
  try {
    c.lang = m.contains("lang") ? parse_lang(m.at("lang").get<std::string>()) : lang;
    build(c, p, entry);
  } catch (const std::exception& e) {
    c.invalid = e.what();
  }
  nlohmann::json key = m;  // nlohmann::json sorts keys: a canonical text
  key.erase("note");
  key["lang"] = lang_name(c.lang);
  c.hash = hex64(hash64(c.source, hash64(key.dump())));
  out.candidate = std::move(c);
  return out;
}

std::string static_check(const Candidate& c, Lang backend_lang) {
  if (!c.invalid.empty()) return "the candidate's fields do not make a kernel: " + c.invalid;
  if (trim(c.source).empty()) return "the source is empty";
  if (c.source.size() > kMaxSource) return "the source is over 256 KiB";
  if (c.lang != backend_lang)
    return "the source is " + std::string(lang_name(c.lang)) + " but the backend runs " +
           std::string(lang_name(backend_lang)) + " (--backend, or \"lang\")";
  if (c.source.find(c.spec.entry) == std::string::npos)
    return "the source never names its entry point '" + c.spec.entry + "'" +
           (c.lang == Lang::cpp ? " (export it with KF_KERNEL(" + c.spec.entry + ", body))" : "");
  return {};
}

}  // namespace kforge::agent
