#pragma once
// What the proposer sends: a `candidate` (a source plus how to launch it) or a `stop`. A line
// that is not such a message is a protocol error (ProposerError); a candidate whose fields are
// wrong is an attempt that the static gate rejects, with feedback, so the proposer can fix it.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/kernel.hpp"
#include "kforge/problem.hpp"

namespace kforge::agent {

struct Candidate {
  nlohmann::json message;  // as received, less "source" (journaled)
  std::string source, note;
  Lang lang = Lang::cpp;
  KernelSpec spec;         // the source, entry, geometry and parameter space
  ParamValues params;      // the values to run (overrides of the spec's defaults)
  std::string hash;        // everything but the note: what resume matches
  std::string invalid;     // why the fields do not make a kernel; empty when they do
};

struct Message {
  bool stop = false;
  std::string reason;                // of a stop
  std::optional<Candidate> candidate;
};

// Parses one line. `entry` is the default entry point and `lang` the default language (the
// backend's). Throws ProposerError, quoting the line, for anything but a candidate or a stop.
[[nodiscard]] Message parse_message(const std::string& line, const Problem& p, Lang lang,
                                    const std::string& entry);

// The static gate, before any compiler runs: empty when the candidate may go on, else why not.
[[nodiscard]] std::string static_check(const Candidate& c, Lang backend_lang);

}  // namespace kforge::agent
