// The descriptor expression language: tokenizer, recursive-descent parser
// with type checking, and an evaluator over a flat node array.
#include "kernel_expression.hpp"

#include <jitwarm/plugin.hpp>

#include "kernel_instantiation.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>

namespace jitwarm::gpu {
namespace {

enum Op : uint8_t {
  kConstant,  // value (integer or boolean), or text in `texts`
  kParam,     // value = schema position
  kLet,       // value = let index
  kNegate,
  kNot,
  kBinary,  // function = the operator (BinaryOp)
  kCall,    // function = Function
};

enum BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

// What a function's argument must be.
enum class Arg : uint8_t {
  integer,
  boolean,
  any,      // integer, boolean or text (if's branches)
  tensor,   // a tensor parameter's name
  intp,     // an integer (or scalar) parameter's name
  floatp,   // a float (or scalar) parameter's name
  scalarp,  // a scalar parameter's name
  dtype,    // a dtype name as text ("float32")
};

enum Function : uint8_t {
  // Both scopes
  kMin,
  kMax,
  kClamp,
  kCeilDiv,
  kRoundUp,
  kNextPow2,
  kIf,
  kDtypeBytes,
  kIsDtype,
  kWarpSize,
  // Compile scope
  kElement,
  kStorage,
  kAligned,
  kIntType,
  kIntClass,
  kDiv16,
  kIsOne,
  kFloatType,
  kScalarIsFloat,
  // Launch scope
  kShape,
  kStride,
  kSmCount,
  kMaxThreads,
  kMaxGridX,
  kMaxGridY,
  kMaxGridZ,
  kThreadsCap,
  kBlockThreads,
  kLanesFor,
  kFitsDtype,
};

struct FunctionInfo {
  const char* name;
  Function function;
  std::array<Arg, 3> args;
  uint8_t min_args, max_args;  // max 255: variadic over the first kind
  ExprType result;             // for kIf: the branches' type
  int8_t scope;                // -1 both, 0 compile, 1 launch
};

constexpr uint8_t kVariadic = 255;
constexpr FunctionInfo kFunctions[] = {
    {"min", kMin, {Arg::integer}, 2, kVariadic, ExprType::integer, -1},
    {"max", kMax, {Arg::integer}, 2, kVariadic, ExprType::integer, -1},
    {"clamp",
     kClamp,
     {Arg::integer, Arg::integer, Arg::integer},
     3,
     3,
     ExprType::integer,
     -1},
    {"ceil_div",
     kCeilDiv,
     {Arg::integer, Arg::integer},
     2,
     2,
     ExprType::integer,
     -1},
    {"round_up",
     kRoundUp,
     {Arg::integer, Arg::integer},
     2,
     2,
     ExprType::integer,
     -1},
    {"next_pow2", kNextPow2, {Arg::integer}, 1, 1, ExprType::integer, -1},
    {"if",
     kIf,
     {Arg::boolean, Arg::any, Arg::any},
     3,
     3,
     ExprType::integer,
     -1},
    {"dtype_bytes", kDtypeBytes, {Arg::tensor}, 1, 1, ExprType::integer, -1},
    {"is_dtype",
     kIsDtype,
     {Arg::tensor, Arg::dtype},
     2,
     2,
     ExprType::boolean,
     -1},
    {"warp_size", kWarpSize, {}, 0, 0, ExprType::integer, -1},
    {"element", kElement, {Arg::tensor}, 1, 1, ExprType::text, 0},
    {"storage", kStorage, {Arg::tensor}, 1, 1, ExprType::text, 0},
    {"aligned", kAligned, {Arg::tensor}, 1, 1, ExprType::boolean, 0},
    {"int_type", kIntType, {Arg::intp}, 1, 1, ExprType::text, 0},
    {"int_class", kIntClass, {Arg::intp}, 1, 1, ExprType::integer, 0},
    {"div16", kDiv16, {Arg::intp}, 1, 1, ExprType::boolean, 0},
    {"is_one", kIsOne, {Arg::intp}, 1, 1, ExprType::boolean, 0},
    {"float_type", kFloatType, {Arg::floatp}, 1, 1, ExprType::text, 0},
    {"scalar_is_float",
     kScalarIsFloat,
     {Arg::scalarp},
     1,
     1,
     ExprType::boolean,
     0},
    {"shape", kShape, {Arg::tensor, Arg::integer}, 2, 2, ExprType::integer, 1},
    {"stride",
     kStride,
     {Arg::tensor, Arg::integer},
     2,
     2,
     ExprType::integer,
     1},
    {"sm_count", kSmCount, {}, 0, 0, ExprType::integer, 1},
    {"max_threads", kMaxThreads, {}, 0, 0, ExprType::integer, 1},
    {"max_grid_x", kMaxGridX, {}, 0, 0, ExprType::integer, 1},
    {"max_grid_y", kMaxGridY, {}, 0, 0, ExprType::integer, 1},
    {"max_grid_z", kMaxGridZ, {}, 0, 0, ExprType::integer, 1},
    {"threads_cap", kThreadsCap, {Arg::integer}, 1, 1, ExprType::integer, -1},
    {"block_threads",
     kBlockThreads,
     {Arg::integer, Arg::integer},
     2,
     2,
     ExprType::integer,
     -1},
    {"lanes_for", kLanesFor, {Arg::integer}, 1, 1, ExprType::integer, 1},
    {"fits_dtype",
     kFitsDtype,
     {Arg::intp, Arg::tensor},
     2,
     2,
     ExprType::boolean,
     1},
};

const FunctionInfo* find_function(std::string_view name) {
  for (const FunctionInfo& f : kFunctions) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const FunctionInfo& info_of(uint8_t function) {
  for (const FunctionInfo& f : kFunctions) {
    if (f.function == function) return f;
  }
  throw plugin::PluginError(JW_ERROR_INTERNAL, "unknown expression function");
}

const char* type_name(ExprType t) {
  switch (t) {
    case ExprType::integer: return "an integer";
    case ExprType::boolean: return "a boolean";
    case ExprType::text: return "a text";
  }
  return "?";
}

[[noreturn]] void runtime_fail(const std::string& message) {
  throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT, message);
}

int64_t checked(__int128 value, const std::string& text) {
  if (value < INT64_MIN || value > INT64_MAX) {
    runtime_fail("'" + text + "' overflows a 64-bit integer");
  }
  return static_cast<int64_t>(value);
}

}  // namespace

// --------------------------------------------------------------------------
// Parsing
// --------------------------------------------------------------------------
class ExpressionParser {
 public:
  ExpressionParser(std::string_view text, const ExprNames& names,
                   ExprScope scope, KernelExpression& out)
      : text_(text), names_(names), scope_(scope), out_(out) {}

  uint32_t parse() {
    const uint32_t root = parse_or();
    skip_space();
    if (pos_ != text_.size()) error(pos_, "unexpected '" + rest() + "'");
    return root;
  }

 private:
  using Node = KernelExpression::Node;

  [[noreturn]] void error(std::size_t at, const std::string& message) const {
    throw ExpressionError(at + 1, message);
  }
  std::string rest() const {
    return std::string(
        text_.substr(pos_, std::min<std::size_t>(12, text_.size() - pos_)));
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) {
      error(pos_, "expected '" + std::string(token) + "'" +
                      (pos_ < text_.size() ? ", found '" + rest() + "'"
                                           : " at the end"));
    }
  }

  uint32_t add(Node node) {
    out_.nodes_.push_back(node);
    return static_cast<uint32_t>(out_.nodes_.size() - 1);
  }
  uint32_t node_with(Node node, std::span<const uint32_t> children) {
    node.first_child = static_cast<uint32_t>(out_.children_.size());
    node.child_count = static_cast<uint32_t>(children.size());
    out_.children_.insert(out_.children_.end(), children.begin(),
                          children.end());
    return add(node);
  }
  ExprType type_of(uint32_t node) const { return out_.nodes_[node].type; }
  void require_type(uint32_t node, ExprType type, const std::string& what) {
    if (type_of(node) != type) {
      error(out_.nodes_[node].column - 1, what + " must be " + type_name(type) +
                                              ", not " +
                                              type_name(type_of(node)));
    }
  }

  uint32_t binary(uint32_t left, uint32_t right, BinaryOp op,
                  std::size_t start) {
    Node n;
    n.op = kBinary;
    n.function = op;
    n.column = static_cast<uint32_t>(start + 1);
    n.length = static_cast<uint32_t>(pos_ - start);
    const std::array<uint32_t, 2> kids{left, right};
    if (op == kAnd || op == kOr) {
      require_type(left, ExprType::boolean, "an operand of && and ||");
      require_type(right, ExprType::boolean, "an operand of && and ||");
      n.type = ExprType::boolean;
    } else if (op == kEq || op == kNe) {
      if (type_of(left) != type_of(right) || type_of(left) == ExprType::text) {
        error(start, "== and != compare two integers or two booleans");
      }
      n.type = ExprType::boolean;
    } else {
      require_type(left, ExprType::integer, "an operand of arithmetic");
      require_type(right, ExprType::integer, "an operand of arithmetic");
      n.type = op >= kLt ? ExprType::boolean : ExprType::integer;
    }
    return node_with(n, kids);
  }

  uint32_t parse_or() {
    const std::size_t start = (skip_space(), pos_);
    uint32_t left = parse_and();
    while (accept("||")) left = binary(left, parse_and(), kOr, start);
    return left;
  }
  uint32_t parse_and() {
    const std::size_t start = (skip_space(), pos_);
    uint32_t left = parse_equality();
    while (accept("&&")) left = binary(left, parse_equality(), kAnd, start);
    return left;
  }
  uint32_t parse_equality() {
    const std::size_t start = (skip_space(), pos_);
    uint32_t left = parse_relation();
    for (;;) {
      if (accept("==")) {
        left = binary(left, parse_relation(), kEq, start);
      } else if (accept("!=")) {
        left = binary(left, parse_relation(), kNe, start);
      } else {
        return left;
      }
    }
  }
  uint32_t parse_relation() {
    const std::size_t start = (skip_space(), pos_);
    uint32_t left = parse_sum();
    for (;;) {
      if (accept("<=")) {
        left = binary(left, parse_sum(), kLe, start);
      } else if (accept(">=")) {
        left = binary(left, parse_sum(), kGe, start);
      } else if (accept("<")) {
        left = binary(left, parse_sum(), kLt, start);
      } else if (accept(">")) {
        left = binary(left, parse_sum(), kGt, start);
      } else {
        return left;
      }
    }
  }
  uint32_t parse_sum() {
    const std::size_t start = (skip_space(), pos_);
    uint32_t left = parse_product();
    for (;;) {
      if (accept("+")) {
        left = binary(left, parse_product(), kAdd, start);
      } else if (accept("-")) {
        left = binary(left, parse_product(), kSub, start);
      } else {
        return left;
      }
    }
  }
  uint32_t parse_product() {
    const std::size_t start = (skip_space(), pos_);
    uint32_t left = parse_unary();
    for (;;) {
      if (accept("*")) {
        left = binary(left, parse_unary(), kMul, start);
      } else if (accept("/")) {
        left = binary(left, parse_unary(), kDiv, start);
      } else if (accept("%")) {
        left = binary(left, parse_unary(), kMod, start);
      } else {
        return left;
      }
    }
  }
  uint32_t parse_unary() {
    skip_space();
    const std::size_t start = pos_;
    if (accept("!")) {
      const uint32_t operand = parse_unary();
      require_type(operand, ExprType::boolean, "the operand of !");
      Node n;
      n.op = kNot;
      n.type = ExprType::boolean;
      n.column = static_cast<uint32_t>(start + 1);
      const std::array<uint32_t, 1> kids{operand};
      return node_with(n, kids);
    }
    if (accept("-")) {
      const uint32_t operand = parse_unary();
      require_type(operand, ExprType::integer, "the operand of -");
      Node n;
      n.op = kNegate;
      n.type = ExprType::integer;
      n.column = static_cast<uint32_t>(start + 1);
      const std::array<uint32_t, 1> kids{operand};
      return node_with(n, kids);
    }
    return parse_primary();
  }

  uint32_t parse_primary() {
    skip_space();
    const std::size_t start = pos_;
    if (pos_ >= text_.size()) error(pos_, "an expression is missing");
    const char c = text_[pos_];
    if (accept("(")) {
      const uint32_t inner = parse_or();
      expect(")");
      return inner;
    }
    Node n;
    n.column = static_cast<uint32_t>(start + 1);
    if (std::isdigit(static_cast<unsigned char>(c))) {
      __int128 value = 0;
      while (pos_ < text_.size() &&
             std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        value = value * 10 + (text_[pos_++] - '0');
        if (value > INT64_MAX) error(start, "the number is too large");
      }
      n.op = kConstant;
      n.type = ExprType::integer;
      n.value = static_cast<int64_t>(value);
      n.length = static_cast<uint32_t>(pos_ - start);
      return add(n);
    }
    if (c == '"') {
      const std::size_t end = text_.find('"', pos_ + 1);
      if (end == std::string_view::npos) error(start, "the text has no end");
      const std::string_view word = text_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      const std::optional<jw_dtype> dtype = plugin::dtype_from_name(word);
      if (!dtype) {
        error(start, "\"" + std::string(word) +
                         "\" is not a dtype (texts name dtypes: float32, "
                         "bfloat16, int64, ...)");
      }
      n.op = kConstant;
      n.type = ExprType::text;  // a dtype literal, only as an argument
      n.value = *dtype;
      n.length = static_cast<uint32_t>(pos_ - start);
      return add(n);
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      error(start, "unexpected '" + rest() + "'");
    }
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
            text_[pos_] == '_'))
      ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    n.length = static_cast<uint32_t>(word.size());
    if (word == "true" || word == "false") {
      n.op = kConstant;
      n.type = ExprType::boolean;
      n.value = word == "true";
      return add(n);
    }
    if (accept("(")) return parse_call(word, start);
    if (const FunctionInfo* f = find_function(word);
        f != nullptr && f->max_args == 0) {
      return call_node(*f, start, {});
    }
    return value_name(word, start);
  }

  // A name used as a value: a let, or a parameter that is an integer in
  // this scope.
  uint32_t value_name(std::string_view word, std::size_t start) {
    Node n;
    n.column = static_cast<uint32_t>(start + 1);
    n.length = static_cast<uint32_t>(word.size());
    for (std::size_t i = names_.lets.size(); i-- > 0;) {
      const ExprLet& let = names_.lets[i];
      if (let.name != word) continue;
      if (scope_ == ExprScope::compile && let.scope == ExprScope::launch) {
        error(start, "'" + std::string(word) + "' is a launch value");
      }
      if (let.type == ExprType::text && scope_ == ExprScope::launch) {
        error(start, "'" + std::string(word) +
                         "' is a spelling: launch expressions read integers "
                         "and booleans");
      }
      n.op = kLet;
      n.type = let.type;
      n.value = static_cast<int64_t>(i);
      return add(n);
    }
    const int param = param_index(word);
    if (param < 0) {
      error(start,
            "unknown name '" + std::string(word) + "' (" + known_names() + ")");
    }
    const jw_param_kind kind = names_.params[param].kind;
    const bool value_here = kind == JW_PARAM_CONSTEXPR ||
                            (scope_ == ExprScope::launch &&
                             (kind == JW_PARAM_INT || kind == JW_PARAM_SCALAR));
    if (!value_here) {
      error(start,
            "'" + std::string(word) + "' is " +
                (kind == JW_PARAM_TENSOR ? "a tensor" : "a parameter") +
                (scope_ == ExprScope::compile
                     ? ": compile expressions read constexpr values, and "
                       "other parameters through functions (element, "
                       "int_type, aligned, ...)"
                     : ": use it through a function (shape, stride, "
                       "dtype_bytes, ...)"));
    }
    n.op = kParam;
    n.type = ExprType::integer;
    n.value = param;
    return add(n);
  }

  int param_index(std::string_view word) const {
    for (std::size_t i = 0; i < names_.params.size(); ++i) {
      if (names_.params[i].name == word) return static_cast<int>(i);
    }
    return -1;
  }
  std::string known_names() const {
    std::string text = "parameters:";
    for (const ExprParam& p : names_.params) text += " " + p.name;
    if (!names_.lets.empty()) {
      text += "; values:";
      for (const ExprLet& l : names_.lets) text += " " + l.name;
    }
    return text;
  }

  uint32_t parse_call(std::string_view name, std::size_t start) {
    const FunctionInfo* f = find_function(name);
    if (f == nullptr) {
      std::string known;
      for (const FunctionInfo& g : kFunctions) {
        if (g.scope < 0 || g.scope == static_cast<int>(scope_))
          known += (known.empty() ? "" : ", ") + std::string(g.name);
      }
      error(start,
            "unknown function '" + std::string(name) + "' (" + known + ")");
    }
    std::vector<uint32_t> args;
    skip_space();
    if (!accept(")")) {
      for (;;) {
        const std::size_t arg_start = (skip_space(), pos_);
        const Arg want = f->args[std::min<std::size_t>(
            args.size(), f->max_args == kVariadic ? 0 : 2)];
        args.push_back(parse_argument(*f, want, arg_start));
        if (accept(")")) break;
        expect(",");
      }
    }
    return call_node(*f, start, args);
  }

  // A parameter name where the function wants one, else an expression.
  uint32_t parse_argument(const FunctionInfo& f, Arg want, std::size_t start) {
    const bool wants_param = want == Arg::tensor || want == Arg::intp ||
                             want == Arg::floatp || want == Arg::scalarp;
    if (!wants_param) return parse_or();
    std::size_t end = pos_;
    while (end < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[end])) ||
            text_[end] == '_'))
      ++end;
    const std::string_view word = text_.substr(pos_, end - pos_);
    const int param = param_index(word);
    if (param < 0) {
      error(start, std::string(f.name) + "() takes a parameter name here; '" +
                       std::string(word.empty() ? rest() : std::string(word)) +
                       "' is not one (" + known_names() + ")");
    }
    const jw_param_kind kind = names_.params[param].kind;
    const bool ok = (want == Arg::tensor && kind == JW_PARAM_TENSOR) ||
                    (want == Arg::intp &&
                     (kind == JW_PARAM_INT || kind == JW_PARAM_SCALAR)) ||
                    (want == Arg::floatp &&
                     (kind == JW_PARAM_FLOAT || kind == JW_PARAM_SCALAR)) ||
                    (want == Arg::scalarp && kind == JW_PARAM_SCALAR);
    if (!ok) {
      const char* wanted = want == Arg::tensor   ? "a tensor"
                           : want == Arg::intp   ? "an integer parameter"
                           : want == Arg::floatp ? "a float parameter"
                                                 : "a scalar parameter";
      error(start, std::string(f.name) + "() takes " + wanted + "; '" +
                       std::string(word) + "' is not one");
    }
    pos_ = end;
    Node n;
    n.op = kParam;
    n.type = ExprType::integer;  // a handle: only its index is used
    n.value = param;
    n.column = static_cast<uint32_t>(start + 1);
    n.length = static_cast<uint32_t>(word.size());
    return add(n);
  }

  uint32_t call_node(const FunctionInfo& f, std::size_t start,
                     std::span<const uint32_t> args) {
    if (f.scope >= 0 && f.scope != static_cast<int>(scope_)) {
      error(start, std::string(f.name) + "() is for " +
                       (f.scope == 0 ? "compile" : "launch") +
                       " expressions only");
    }
    if (args.size() < f.min_args ||
        (f.max_args != kVariadic && args.size() > f.max_args)) {
      error(start, std::string(f.name) + "() takes " +
                       (f.min_args == f.max_args
                            ? std::to_string(f.min_args)
                            : "at least " + std::to_string(f.min_args)) +
                       " argument(s), got " + std::to_string(args.size()));
    }
    Node n;
    n.op = kCall;
    n.function = f.function;
    n.type = f.result;
    n.column = static_cast<uint32_t>(start + 1);
    n.length = static_cast<uint32_t>(pos_ - start);
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg want =
          f.args[std::min<std::size_t>(i, f.max_args == kVariadic ? 0 : 2)];
      const std::string what =
          "argument " + std::to_string(i + 1) + " of " + f.name + "()";
      if (want == Arg::integer) require_type(args[i], ExprType::integer, what);
      if (want == Arg::boolean) require_type(args[i], ExprType::boolean, what);
      if (want == Arg::dtype) {
        const Node& a = out_.nodes_[args[i]];
        if (a.op != kConstant || a.type != ExprType::text) {
          error(a.column - 1,
                what + " must be a dtype name such as \"float32\"");
        }
      }
    }
    if (f.function == kIf) {
      if (type_of(args[1]) != type_of(args[2])) {
        error(start, "the two branches of if() must have one type");
      }
      n.type = type_of(args[1]);
    }
    return node_with(n, args);
  }

  std::string_view text_;
  const ExprNames& names_;
  ExprScope scope_;
  KernelExpression& out_;
  std::size_t pos_ = 0;
};

KernelExpression KernelExpression::parse(std::string_view text,
                                         const ExprNames& names,
                                         ExprScope scope) {
  KernelExpression e;
  e.text_ = std::string(text);
  e.scope_ = scope;
  ExpressionParser parser(e.text_, names, scope, e);
  e.root_ = parser.parse();
  e.type_ = e.nodes_[e.root_].type;
  e.varies_ = scope == ExprScope::launch && e.varies(e.root_, names);
  e.node_varies_.resize(e.nodes_.size());
  if (scope == ExprScope::launch) {
    for (uint32_t i = 0; i < e.nodes_.size(); ++i) {
      e.node_varies_[i] = e.varies(i, names) ? 1 : 0;
    }
  }
  const Node& root = e.nodes_[e.root_];
  if (root.op == kConstant && root.type == ExprType::text) {
    throw ExpressionError(root.column,
                          "a dtype name is only an argument (is_dtype)");
  }
  return e;
}

bool KernelExpression::varies(uint32_t index, const ExprNames& names) const {
  const Node& n = nodes_[index];
  const auto any_child = [&](bool tensors_too) {
    for (uint32_t k = 0; k < n.child_count; ++k) {
      const uint32_t c = children_[n.first_child + k];
      const Node& child = nodes_[c];
      // A tensor named as an argument (dtype_bytes(x), is_dtype(x, ..)):
      // its dtype is the key's. Only shape and stride read the tensor.
      if (!tensors_too && child.op == kParam &&
          names.params[static_cast<std::size_t>(child.value)].kind ==
              JW_PARAM_TENSOR) {
        continue;
      }
      if (varies(c, names)) return true;
    }
    return false;
  };
  switch (n.op) {
    case kConstant: return false;
    case kParam:
      // A constexpr's argument is its key's value (P12); other scalars are
      // the launch's own.
      return names.params[static_cast<std::size_t>(n.value)].kind !=
             JW_PARAM_CONSTEXPR;
    case kLet: {
      const ExprLet& let = names.lets[static_cast<std::size_t>(n.value)];
      return let.scope == ExprScope::launch && let.varies;
    }
    case kCall:
      switch (n.function) {
        case kShape:
        case kStride: return true;
        default: return any_child(/*tensors_too=*/false);
      }
    default: return any_child(/*tensors_too=*/true);
  }
}

// --------------------------------------------------------------------------
// Evaluation
// --------------------------------------------------------------------------
struct Evaluator {
  const KernelExpression& e;
  const CompileInputs* compile = nullptr;
  const LaunchInputs* launch = nullptr;

  using Node = KernelExpression::Node;
  const Node& node(uint32_t i) const { return e.nodes_[i]; }
  uint32_t child(const Node& n, uint32_t k) const {
    return e.children_[n.first_child + k];
  }
  std::string text_of(const Node& n) const {
    return e.text_.substr(n.column - 1, n.length);
  }

  // Compile scope: the key's spec of a parameter.
  const jw_param_spec& spec(int64_t index) const {
    return compile->key->params[index];
  }
  // Launch scope: an argument.
  const jw_arg_value& arg(int64_t index) const {
    return launch->args[static_cast<std::size_t>(index)];
  }
  const jw_tensor& tensor(int64_t index) const {
    return *arg(index).value.tensor;
  }
  jw_dtype dtype_of(int64_t index) const {
    return compile != nullptr ? spec(index).dtype : tensor(index).meta.dtype;
  }
  uint32_t warp() const {
    return compile != nullptr
               ? compile->warp_size
               : std::max<uint32_t>(launch->limits->warp_size, 1);
  }

  int64_t param_value(const Node& n) const {
    if (compile != nullptr) {
      const jw_scalar& v = spec(n.value).constexpr_value;
      if (v.kind == JW_SCALAR_UINT &&
          v.value.u > static_cast<uint64_t>(INT64_MAX))
        runtime_fail("'" + text_of(n) + "' is too large for an expression");
      if (v.kind == JW_SCALAR_FLOAT)
        runtime_fail("'" + text_of(n) +
                     "' is a float; expressions use integers");
      return v.kind == JW_SCALAR_UINT ? static_cast<int64_t>(v.value.u)
                                      : v.value.i;
    }
    const jw_scalar& s = arg(n.value).value.scalar;
    switch (s.kind) {
      case JW_SCALAR_INT:
      case JW_SCALAR_BOOL: return s.value.i;
      case JW_SCALAR_UINT:
        if (s.value.u > static_cast<uint64_t>(INT64_MAX)) {
          runtime_fail("'" + text_of(n) + "' = " + std::to_string(s.value.u) +
                       " is too large for an expression");
        }
        return static_cast<int64_t>(s.value.u);
      default: runtime_fail("'" + text_of(n) + "' is not an integer here");
    }
  }

  ExprSlot let_value(const Node& n) const {
    if (compile != nullptr) return compile->lets[n.value];
    // Launch scope: compile lets come first in the names, launch lets after.
    const auto index = static_cast<std::size_t>(n.value);
    if (index < launch->compile_lets.size()) return launch->compile_lets[index];
    return launch->lets[index - launch->compile_lets.size()];
  }

  int64_t integer(uint32_t i) const {
    const Node& n = node(i);
    switch (n.op) {
      case kConstant: return n.value;
      case kParam: return param_value(n);
      case kLet: return let_value(n).integer;
      case kNegate:
        return checked(-static_cast<__int128>(integer(child(n, 0))), e.text_);
      case kBinary: {
        const __int128 a = integer(child(n, 0));
        const __int128 b = integer(child(n, 1));
        switch (n.function) {
          case kAdd: return checked(a + b, e.text_);
          case kSub: return checked(a - b, e.text_);
          case kMul: return checked(a * b, e.text_);
          case kDiv:
          case kMod:
            if (b == 0) runtime_fail("'" + text_of(n) + "' divides by zero");
            return checked(n.function == kDiv ? a / b : a % b, e.text_);
          default: break;
        }
        break;
      }
      case kCall: return call_integer(n);
      default: break;
    }
    runtime_fail("'" + text_of(n) + "' is not an integer");
  }

  bool boolean(uint32_t i) const {
    const Node& n = node(i);
    switch (n.op) {
      case kConstant: return n.value != 0;
      case kLet: return let_value(n).boolean;
      case kNot: return !boolean(child(n, 0));
      case kBinary: {
        switch (n.function) {
          case kAnd: return boolean(child(n, 0)) && boolean(child(n, 1));
          case kOr: return boolean(child(n, 0)) || boolean(child(n, 1));
          case kEq:
          case kNe: {
            const bool same =
                node(child(n, 0)).type == ExprType::boolean
                    ? boolean(child(n, 0)) == boolean(child(n, 1))
                    : integer(child(n, 0)) == integer(child(n, 1));
            return n.function == kEq ? same : !same;
          }
          default: break;
        }
        const int64_t a = integer(child(n, 0));
        const int64_t b = integer(child(n, 1));
        switch (n.function) {
          case kLt: return a < b;
          case kLe: return a <= b;
          case kGt: return a > b;
          case kGe: return a >= b;
          default: break;
        }
        break;
      }
      case kCall: return call_boolean(n);
      default: break;
    }
    runtime_fail("'" + text_of(n) + "' is not a boolean");
  }

  std::string spelling(uint32_t i) const {
    const Node& n = node(i);
    switch (n.type) {
      case ExprType::integer: return std::to_string(integer(i));
      case ExprType::boolean: return boolean(i) ? "true" : "false";
      case ExprType::text: break;
    }
    if (n.op == kLet) {
      runtime_fail("'" + text_of(n) + "' is a spelling let; use it only once");
    }
    if (n.op == kCall) {
      const int64_t p = node(child(n, 0)).value;
      switch (n.function) {
        case kIf:
          return boolean(child(n, 0)) ? spelling(child(n, 1))
                                      : spelling(child(n, 2));
        case kElement: return std::string(element_type_spelling(spec(p).dtype));
        case kStorage: return std::string(storage_type_spelling(spec(p).dtype));
        case kIntType:
          return std::string(
              int_type_spelling(int_spec(node(child(n, 0))).type));
        case kFloatType:
          return float_spec(node(child(n, 0))) == JW_FLOAT_F64 ? "double"
                                                               : "float";
        default: break;
      }
    }
    runtime_fail("'" + text_of(n) + "' has no spelling");
  }

  jw_int_spec int_spec(const Node& param) const {
    const jw_param_spec& s = spec(param.value);
    const bool integer_param =
        s.kind == JW_PARAM_INT ||
        (s.kind == JW_PARAM_SCALAR && s.scalar_kind == JW_SCALAR_INT);
    if (!integer_param) {
      runtime_fail("'" + text_of(param) + "' is not an integer in this key");
    }
    return s.int_spec;
  }
  jw_float_type float_spec(const Node& param) const {
    const jw_param_spec& s = spec(param.value);
    const bool float_param =
        s.kind == JW_PARAM_FLOAT ||
        (s.kind == JW_PARAM_SCALAR && s.scalar_kind == JW_SCALAR_FLOAT);
    if (!float_param) {
      runtime_fail("'" + text_of(param) + "' is not a float in this key");
    }
    return s.float_type;
  }

  // Whole warps up to `cap` (and, at launch, the loaded function's limit).
  int64_t threads_cap(int64_t cap) const {
    const int64_t w = warp();
    const int64_t limit =
        launch != nullptr
            ? std::min<int64_t>(cap, launch->limits->max_threads_per_block)
            : cap;
    return std::max(w, limit / w * w);
  }

  int64_t call_integer(const Node& n) const {
    const auto arg_int = [&](uint32_t k) { return integer(child(n, k)); };
    switch (n.function) {
      case kMin:
      case kMax: {
        int64_t v = arg_int(0);
        for (uint32_t k = 1; k < n.child_count; ++k) {
          v = n.function == kMin ? std::min(v, arg_int(k))
                                 : std::max(v, arg_int(k));
        }
        return v;
      }
      case kClamp: {
        const int64_t lo = arg_int(1), hi = arg_int(2);
        if (lo > hi) runtime_fail("'" + text_of(n) + "': the bounds cross");
        return std::clamp(arg_int(0), lo, hi);
      }
      case kCeilDiv:
      case kRoundUp: {
        const int64_t a = arg_int(0), b = arg_int(1);
        if (b <= 0)
          runtime_fail("'" + text_of(n) + "' needs a positive divisor");
        if (a < 0)
          runtime_fail("'" + text_of(n) + "' needs a count, not a negative");
        const int64_t q = a / b + (a % b != 0);
        return n.function == kCeilDiv
                   ? q
                   : checked(static_cast<__int128>(q) * b, e.text_);
      }
      case kNextPow2: {
        const int64_t v = arg_int(0);
        int64_t p = 1;
        while (p < v) {
          if (p > INT64_MAX / 2) runtime_fail("'" + text_of(n) + "' overflows");
          p *= 2;
        }
        return p;
      }
      case kIf:
        return boolean(child(n, 0)) ? integer(child(n, 1))
                                    : integer(child(n, 2));
      case kDtypeBytes:
        return static_cast<int64_t>(
            plugin::dtype_size(dtype_of(node(child(n, 0)).value)));
      case kWarpSize: return warp();
      case kIntClass: return int_spec(node(child(n, 0))).value_class;
      case kShape:
      case kStride: {
        const jw_tensor_meta& m = tensor(node(child(n, 0)).value).meta;
        const int64_t d = arg_int(1);
        if (d < 0 || d >= static_cast<int64_t>(m.rank)) {
          runtime_fail("'" + text_of(n) + "': the tensor has rank " +
                       std::to_string(m.rank));
        }
        if (n.function == kShape) return m.shape[d];
        if ((m.flags & JW_TENSOR_HAS_STRIDES) != 0) return m.strides[d];
        int64_t stride = 1;
        for (auto k = static_cast<int64_t>(m.rank) - 1; k > d; --k)
          stride = checked(
              static_cast<__int128>(stride) * std::max<int64_t>(m.shape[k], 1),
              e.text_);
        return stride;
      }
      case kSmCount: return launch->limits->multiprocessor_count;
      case kMaxThreads: return launch->limits->max_threads_per_block;
      case kMaxGridX: return launch->limits->max_grid.x;
      case kMaxGridY: return launch->limits->max_grid.y;
      case kMaxGridZ: return launch->limits->max_grid.z;
      case kThreadsCap: return threads_cap(arg_int(0));
      case kBlockThreads: {
        const int64_t w = warp();
        const int64_t accesses = std::max<int64_t>(arg_int(0), 1);
        if (accesses > INT64_MAX - w)
          runtime_fail("'" + text_of(n) + "' overflows");
        const int64_t wanted = (accesses + w - 1) / w * w;
        return std::clamp(wanted, w, threads_cap(arg_int(1)));
      }
      case kLanesFor: {
        const int64_t tokens = arg_int(0);
        int64_t lanes = 1;
        while (lanes < tokens && lanes < warp()) lanes *= 2;
        return lanes;
      }
      default: break;
    }
    runtime_fail("'" + text_of(n) + "' is not an integer");
  }

  bool call_boolean(const Node& n) const {
    switch (n.function) {
      case kIf:
        return boolean(child(n, 0)) ? boolean(child(n, 1))
                                    : boolean(child(n, 2));
      case kIsDtype:
        return dtype_of(node(child(n, 0)).value) == node(child(n, 1)).value;
      case kAligned:
        return spec(node(child(n, 0)).value).alignment == JW_ALIGN_16;
      case kDiv16:
        return int_spec(node(child(n, 0))).value_class == JW_INT_CLASS_DIV16;
      case kIsOne:
        return int_spec(node(child(n, 0))).value_class == JW_INT_CLASS_ONE;
      case kScalarIsFloat:
        return spec(node(child(n, 0)).value).scalar_kind == JW_SCALAR_FLOAT;
      case kFitsDtype: {
        const jw_scalar& s = arg(node(child(n, 0)).value).value.scalar;
        const jw_dtype d = dtype_of(node(child(n, 1)).value);
        if (s.kind == JW_SCALAR_FLOAT)
          return d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
        const __int128 v = s.kind == JW_SCALAR_UINT
                               ? static_cast<__int128>(s.value.u)
                               : static_cast<__int128>(s.value.i);
        switch (d) {
          case JW_DTYPE_INT32: return v >= INT32_MIN && v <= INT32_MAX;
          case JW_DTYPE_INT64: return v >= INT64_MIN && v <= INT64_MAX;
          case JW_DTYPE_FLOAT32:
          case JW_DTYPE_FLOAT64: return true;
          default: return false;
        }
      }
      default: break;
    }
    runtime_fail("'" + text_of(n) + "' is not a boolean");
  }

  // "name = value" for every parameter, let and call the expression reads.
  void collect(uint32_t i, std::string& out) const {
    const Node& n = node(i);
    const bool leaf =
        n.op == kParam || n.op == kLet ||
        (n.op == kCall && n.type != ExprType::text && n.function != kIf &&
         n.function != kMin && n.function != kMax && n.function != kClamp &&
         n.function != kCeilDiv && n.function != kRoundUp);
    if (leaf && !(n.op == kParam && is_handle(i))) {
      std::string value;
      try {
        value = n.type == ExprType::boolean ? (boolean(i) ? "true" : "false")
                                            : std::to_string(integer(i));
      } catch (const std::exception&) {
        value = "?";
      }
      const std::string entry = text_of(n) + " = " + value;
      if (out.find(entry) == std::string::npos)
        out += (out.empty() ? "" : ", ") + entry;
      if (n.op != kCall) return;
    }
    if (n.op == kCall && leaf) return;
    for (uint32_t k = 0; k < n.child_count; ++k) collect(child(n, k), out);
  }
  // A parameter passed to a function by name (not read as a value).
  bool is_handle(uint32_t i) const {
    for (const Node& parent : e.nodes_) {
      if (parent.op != kCall) continue;
      const FunctionInfo& f = info_of(parent.function);
      for (uint32_t k = 0; k < parent.child_count; ++k) {
        if (child(parent, k) != i) continue;
        const Arg want =
            f.args[std::min<std::size_t>(k, f.max_args == kVariadic ? 0 : 2)];
        return want == Arg::tensor || want == Arg::intp ||
               want == Arg::floatp || want == Arg::scalarp;
      }
    }
    return false;
  }
};

int64_t KernelExpression::integer(const CompileInputs& in) const {
  return Evaluator{*this, &in, nullptr}.integer(root_);
}
bool KernelExpression::boolean(const CompileInputs& in) const {
  return Evaluator{*this, &in, nullptr}.boolean(root_);
}
std::string KernelExpression::spelling(const CompileInputs& in) const {
  return Evaluator{*this, &in, nullptr}.spelling(root_);
}
int64_t KernelExpression::integer(const LaunchInputs& in) const {
  return Evaluator{*this, nullptr, &in}.integer(root_);
}
bool KernelExpression::boolean(const LaunchInputs& in) const {
  return Evaluator{*this, nullptr, &in}.boolean(root_);
}
std::string KernelExpression::values(const LaunchInputs& in) const {
  std::string out;
  Evaluator{*this, nullptr, &in}.collect(root_, out);
  return out;
}
std::string KernelExpression::values(const CompileInputs& in) const {
  std::string out;
  Evaluator{*this, &in, nullptr}.collect(root_, out);
  return out;
}

// --------------------------------------------------------------------------
// LaunchProgram
// --------------------------------------------------------------------------

namespace {

enum ProgramOp : uint8_t {
  pConst,     // push value
  pLoad,      // push out[target] (a varying launch let)
  pIntParam,  // push scalar argument `param` as an integer
  pShape,     // pop d; push shape(param, d)
  pStride,    // pop d; push stride(param, d)
  pShapeAt,   // push shape(param, value)
  pStrideAt,  // push stride(param, value)
  pNegate,    // checked
  pAdd,       // checked, as every arithmetic op below
  pSub,
  pMul,
  pDiv,
  pMod,
  pEq,
  pNe,
  pLt,
  pLe,
  pGt,
  pGe,
  pNot,
  pMin,
  pMax,
  pClamp,  // pop hi, lo, x
  pCeilDiv,
  pRoundUp,
  pNextPow2,
  pThreadsCap,    // param = warp size, value = the function's thread limit
  pBlockThreads,  // likewise
  pLanesFor,      // param = warp size
  pFitsDtype,     // push whether scalar argument `param` fits dtype `value`
  pAndJump,       // top false: jump to target keeping it; else pop
  pOrJump,        // top true: jump to target keeping it; else pop
  pJumpIfFalse,   // pop; false: jump to target
  pJump,
  pStore,    // pop into out[target]
  pRequire,  // pop; false: the run fails
};

constexpr uint32_t kMaxProgramStack = 16;

int64_t threads_cap_of(int64_t cap, int64_t warp, int64_t limit) {
  return std::max(warp, std::min(cap, limit) / warp * warp);
}

// Shape or stride `d` of a tensor (compact row-major when it has no
// strides), or false when there is none or it overflows.
bool dimension_of(const jw_tensor_meta& m, bool shape, int64_t d,
                  int64_t& value) {
  if (d < 0 || d >= static_cast<int64_t>(m.rank)) return false;
  if (shape) {
    value = m.shape[d];
  } else if ((m.flags & JW_TENSOR_HAS_STRIDES) != 0) {
    value = m.strides[d];
  } else {
    int64_t stride = 1;
    for (auto k = static_cast<int64_t>(m.rank) - 1; k > d; --k) {
      if (__builtin_mul_overflow(stride, std::max<int64_t>(m.shape[k], 1),
                                 &stride)) {
        return false;
      }
    }
    value = stride;
  }
  return true;
}

}  // namespace

bool LaunchProgram::emit(const KernelExpression& e, uint32_t index,
                         const LaunchInputs& in, std::vector<Instruction>& code,
                         uint32_t& depth, uint32_t& max_depth) const {
  using Node = KernelExpression::Node;
  const Node& n = e.nodes_[index];
  const auto push = [&](Instruction instruction, int delta) {
    code.push_back(instruction);
    depth = static_cast<uint32_t>(static_cast<int>(depth) + delta);
    max_depth = std::max(max_depth, depth);
  };
  const auto op = [](uint8_t o) {
    Instruction i;
    i.op = o;
    return i;
  };
  const auto child = [&](uint32_t k) { return e.children_[n.first_child + k]; };
  const auto emit_child = [&](uint32_t k) {
    return emit(e, child(k), in, code, depth, max_depth);
  };
  const auto param_of = [&](uint32_t k) {
    return static_cast<uint16_t>(e.nodes_[child(k)].value);
  };
  const auto warp = [&] {
    return static_cast<uint16_t>(std::max<uint32_t>(in.limits->warp_size, 1));
  };
  // A node that is the same at every launch: its value now is its value
  // then. If it fails now it is left to the general evaluation (it may sit
  // in a branch that is never taken).
  const auto folded = [&](uint32_t node) -> std::optional<int64_t> {
    if (e.node_varies(node) || e.nodes_[node].type == ExprType::text) {
      return std::nullopt;
    }
    try {
      const Evaluator evaluator{e, nullptr, &in};
      return e.nodes_[node].type == ExprType::boolean
                 ? (evaluator.boolean(node) ? 1 : 0)
                 : evaluator.integer(node);
    } catch (const plugin::PluginError&) {
      return std::nullopt;
    }
  };
  if (n.type == ExprType::text) return false;
  if (const std::optional<int64_t> value = folded(index)) {
    Instruction constant = op(pConst);
    constant.value = *value;
    push(constant, +1);
    return true;
  }
  switch (n.op) {
    case kConstant: {
      Instruction constant = op(pConst);
      constant.value = n.value;
      push(constant, +1);
      return true;
    }
    case kParam: {
      if (n.type != ExprType::integer) return false;
      Instruction load = op(pIntParam);
      load.param = static_cast<uint16_t>(n.value);
      push(load, +1);
      return true;
    }
    case kLet: {
      const auto i = static_cast<std::size_t>(n.value);
      if (i < in.compile_lets.size()) return false;  // folded above if it can
      Instruction load = op(pLoad);
      load.target = static_cast<uint32_t>(i - in.compile_lets.size());
      if (load.target >= kMaxSlots) return false;
      push(load, +1);
      return true;
    }
    case kNegate:
    case kNot:
      if (!emit_child(0)) return false;
      push(op(n.op == kNegate ? pNegate : pNot), 0);
      return true;
    case kBinary: {
      if (n.function == kAnd || n.function == kOr) {
        // A known left side decides alone or leaves the right side alone.
        if (const std::optional<int64_t> left = folded(child(0))) {
          const bool decides = (*left != 0) == (n.function == kOr);
          if (!decides) return emit_child(1);
          Instruction constant = op(pConst);
          constant.value = *left;
          push(constant, +1);
          return true;
        }
        if (!emit_child(0)) return false;
        const std::size_t jump = code.size();
        push(op(n.function == kAnd ? pAndJump : pOrJump), -1);
        if (!emit_child(1)) return false;
        code[jump].target = static_cast<uint32_t>(code.size());
        return true;
      }
      static constexpr uint8_t kOps[] = {pAdd, pSub, pMul, pDiv, pMod, pEq,
                                         pNe,  pLt,  pLe,  pGt,  pGe};
      if (n.function >= std::size(kOps)) return false;
      if (!emit_child(0) || !emit_child(1)) return false;
      push(op(kOps[n.function]), -1);
      return true;
    }
    case kCall: break;
    default: return false;
  }
  switch (n.function) {
    case kMin:
    case kMax:
      if (!emit_child(0)) return false;
      for (uint32_t k = 1; k < n.child_count; ++k) {
        if (!emit_child(k)) return false;
        push(op(n.function == kMin ? pMin : pMax), -1);
      }
      return true;
    case kClamp:
      if (!emit_child(0) || !emit_child(1) || !emit_child(2)) return false;
      push(op(pClamp), -2);
      return true;
    case kCeilDiv:
    case kRoundUp:
      if (!emit_child(0) || !emit_child(1)) return false;
      push(op(n.function == kCeilDiv ? pCeilDiv : pRoundUp), -1);
      return true;
    case kNextPow2:
      if (!emit_child(0)) return false;
      push(op(pNextPow2), 0);
      return true;
    case kIf: {
      if (const std::optional<int64_t> condition = folded(child(0))) {
        return emit_child(*condition != 0 ? 1 : 2);
      }
      if (!emit_child(0)) return false;
      const std::size_t to_else = code.size();
      push(op(pJumpIfFalse), -1);
      if (!emit_child(1)) return false;
      const std::size_t to_end = code.size();
      push(op(pJump), 0);
      depth -= 1;  // the other branch starts where this one did
      code[to_else].target = static_cast<uint32_t>(code.size());
      if (!emit_child(2)) return false;
      code[to_end].target = static_cast<uint32_t>(code.size());
      return true;
    }
    case kShape:
    case kStride: {
      Instruction read;
      read.param = param_of(0);
      if (const std::optional<int64_t> d = folded(child(1))) {
        read.op = n.function == kShape ? pShapeAt : pStrideAt;
        read.value = *d;
        push(read, +1);
        return true;
      }
      if (!emit_child(1)) return false;
      read.op = n.function == kShape ? pShape : pStride;
      push(read, 0);
      return true;
    }
    case kThreadsCap:
    case kBlockThreads: {
      const bool cap = n.function == kThreadsCap;
      if (!emit_child(0) || (!cap && !emit_child(1))) return false;
      Instruction limit = op(cap ? pThreadsCap : pBlockThreads);
      limit.param = warp();
      limit.value = in.limits->max_threads_per_block;
      push(limit, cap ? 0 : -1);
      return true;
    }
    case kLanesFor: {
      if (!emit_child(0)) return false;
      Instruction lanes = op(pLanesFor);
      lanes.param = warp();
      push(lanes, 0);
      return true;
    }
    case kFitsDtype: {
      Instruction fits = op(pFitsDtype);
      fits.param = param_of(0);
      fits.value = Evaluator{e, nullptr, &in}.dtype_of(param_of(1));
      push(fits, +1);
      return true;
    }
    default: return false;
  }
}

bool LaunchProgram::append(const KernelExpression& e, const LaunchInputs& in,
                           Instruction last) {
  std::vector<Instruction> code;
  uint32_t depth = 0;
  uint32_t max_depth = 0;
  if (!emit(e, e.root_, in, code, depth, max_depth) ||
      max_depth > kMaxProgramStack) {
    return false;
  }
  // Jump targets are relative to `code`: move them to their place.
  const auto base = static_cast<uint32_t>(code_.size());
  for (Instruction& i : code) {
    if (i.op == pAndJump || i.op == pOrJump || i.op == pJumpIfFalse ||
        i.op == pJump) {
      i.target += base;
    }
  }
  code.push_back(last);
  code_.insert(code_.end(), code.begin(), code.end());
  return true;
}

bool LaunchProgram::store(const KernelExpression& e, const LaunchInputs& in,
                          uint32_t slot) {
  if (slot >= kMaxSlots) return false;
  Instruction store;
  store.op = pStore;
  store.target = slot;
  return append(e, in, store);
}

bool LaunchProgram::require(const KernelExpression& e, const LaunchInputs& in) {
  Instruction require;
  require.op = pRequire;
  return append(e, in, require);
}

bool LaunchProgram::run(std::span<const jw_arg_value> args,
                        std::array<int64_t, kMaxSlots>& out) const {
  // `top` points at the top of the stack (emit() bounded its depth); one
  // flat switch, so a binary operator costs one dispatch, not two.
  std::array<int64_t, kMaxProgramStack + 1> stack;
  int64_t* top = stack.data();  // stack[0] is never read
  const Instruction* pc = code_.data();
  const Instruction* const end = pc + code_.size();
  const Instruction* const begin = pc;
  const auto tensor_meta = [&](uint16_t p) -> const jw_tensor_meta& {
    return args[p].value.tensor->meta;
  };
  // Shape or stride `d` of parameter `p`, or false.
  const auto dimension = [&](const Instruction& i, bool shape, int64_t d,
                             int64_t& value) {
    return dimension_of(tensor_meta(i.param), shape, d, value);
  };
  while (pc != end) {
    const Instruction& i = *pc++;
    switch (i.op) {
      case pConst: *++top = i.value; break;
      case pLoad: *++top = out[i.target]; break;
      case pIntParam: {
        const jw_scalar& s = args[i.param].value.scalar;
        if (s.kind == JW_SCALAR_INT || s.kind == JW_SCALAR_BOOL) {
          *++top = s.value.i;
        } else if (s.kind == JW_SCALAR_UINT &&
                   s.value.u <= static_cast<uint64_t>(INT64_MAX)) {
          *++top = static_cast<int64_t>(s.value.u);
        } else {
          return false;
        }
        break;
      }
      case pShapeAt:
      case pStrideAt:
        ++top;
        if (!dimension(i, i.op == pShapeAt, i.value, *top)) return false;
        break;
      case pShape:
      case pStride:
        if (!dimension(i, i.op == pShape, *top, *top)) return false;
        break;
      case pNegate:
        if (*top == INT64_MIN) return false;
        *top = -*top;
        break;
      case pNot: *top = *top == 0 ? 1 : 0; break;
      // Short-circuit: a top that decides the result (false for and, true
      // for or) stays and skips the right side; else it is popped.
      case pAndJump:
      case pOrJump:
        if ((*top != 0) == (i.op == pOrJump)) {
          pc = begin + i.target;
        } else {
          --top;
        }
        break;
      case pJumpIfFalse:
        if (*top-- == 0) pc = begin + i.target;
        break;
      case pJump: pc = begin + i.target; break;
      case pStore: out[i.target] = *top--; break;
      case pRequire:
        if (*top-- == 0) return false;
        break;
      case pNextPow2: {
        int64_t p = 1;
        while (p < *top) {
          if (p > INT64_MAX / 2) return false;
          p *= 2;
        }
        *top = p;
        break;
      }
      case pThreadsCap: *top = threads_cap_of(*top, i.param, i.value); break;
      case pLanesFor: {
        int64_t lanes = 1;
        while (lanes < *top && lanes < i.param) lanes *= 2;
        *top = lanes;
        break;
      }
      case pFitsDtype: {
        const jw_scalar& s = args[i.param].value.scalar;
        const auto d = static_cast<jw_dtype>(i.value);
        bool fits = false;
        if (s.kind == JW_SCALAR_FLOAT) {
          fits = d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
        } else if (d == JW_DTYPE_INT32) {
          fits = s.kind == JW_SCALAR_UINT
                     ? s.value.u <= INT32_MAX
                     : s.value.i >= INT32_MIN && s.value.i <= INT32_MAX;
        } else if (d == JW_DTYPE_INT64) {
          fits = s.kind != JW_SCALAR_UINT ||
                 s.value.u <= static_cast<uint64_t>(INT64_MAX);
        } else {
          fits = d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
        }
        *++top = fits ? 1 : 0;
        break;
      }
      case pClamp: {
        const int64_t hi = *top--;
        const int64_t lo = *top--;
        if (lo > hi) return false;
        *top = std::clamp(*top, lo, hi);
        break;
      }
      // The binary operators: b on top, a below it; the result replaces a.
      case pAdd:
        --top;
        if (__builtin_add_overflow(top[0], top[1], top)) return false;
        break;
      case pSub:
        --top;
        if (__builtin_sub_overflow(top[0], top[1], top)) return false;
        break;
      case pMul:
        --top;
        if (__builtin_mul_overflow(top[0], top[1], top)) return false;
        break;
      case pDiv:
      case pMod: {
        const int64_t b = *top--;
        int64_t& a = *top;
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        a = i.op == pDiv ? a / b : a % b;
        break;
      }
      case pEq:
        --top;
        top[0] = top[0] == top[1];
        break;
      case pNe:
        --top;
        top[0] = top[0] != top[1];
        break;
      case pLt:
        --top;
        top[0] = top[0] < top[1];
        break;
      case pLe:
        --top;
        top[0] = top[0] <= top[1];
        break;
      case pGt:
        --top;
        top[0] = top[0] > top[1];
        break;
      case pGe:
        --top;
        top[0] = top[0] >= top[1];
        break;
      case pMin:
        --top;
        top[0] = std::min(top[0], top[1]);
        break;
      case pMax:
        --top;
        top[0] = std::max(top[0], top[1]);
        break;
      case pCeilDiv:
      case pRoundUp: {
        const int64_t b = *top--;
        int64_t& a = *top;
        if (b <= 0 || a < 0) return false;
        const int64_t q = a / b + (a % b != 0);
        if (i.op == pCeilDiv) {
          a = q;
        } else if (__builtin_mul_overflow(q, b, &a)) {
          return false;
        }
        break;
      }
      case pBlockThreads: {
        // a = accesses, b = cap (block_threads(accesses, cap)).
        const int64_t b = *top--;
        int64_t& a = *top;
        const int64_t w = i.param;
        const int64_t accesses = std::max<int64_t>(a, 1);
        if (accesses > INT64_MAX - w) return false;
        const int64_t wanted = (accesses + w - 1) / w * w;
        a = std::clamp(wanted, w, threads_cap_of(b, w, i.value));
        break;
      }
      default: return false;
    }
  }
  return true;
}

bool LaunchProgram::index_inputs(uint32_t max_words) {
  inputs_.clear();
  input_words_ = 0;
  const auto add = [&](Input::Kind kind, uint16_t param, int64_t dimension) {
    for (const Input& known : inputs_) {
      if (known.kind == kind && known.param == param &&
          known.dimension == dimension) {
        return;
      }
    }
    inputs_.push_back(Input{kind, param, dimension});
    input_words_ += kind == Input::Kind::scalar ? 2 : 1;
  };
  for (const Instruction& i : code_) {
    switch (i.op) {
      case pIntParam:
      case pFitsDtype: add(Input::Kind::scalar, i.param, 0); break;
      case pShapeAt: add(Input::Kind::shape, i.param, i.value); break;
      case pStrideAt: add(Input::Kind::stride, i.param, i.value); break;
      case pShape:
      case pStride:
        inputs_.clear();
        input_words_ = 0;
        return false;
      default: break;
    }
  }
  if (input_words_ > max_words) {
    inputs_.clear();
    input_words_ = 0;
    return false;
  }
  return true;
}

bool LaunchProgram::read_inputs(std::span<const jw_arg_value> args,
                                std::span<uint64_t> words) const {
  std::size_t w = 0;
  for (const Input& input : inputs_) {
    const jw_arg_value& arg = args[input.param];
    if (input.kind == Input::Kind::scalar) {
      words[w++] = arg.value.scalar.kind;
      std::memcpy(&words[w++], &arg.value.scalar.value, sizeof(uint64_t));
      continue;
    }
    int64_t value = 0;
    if (!dimension_of(arg.value.tensor->meta, input.kind == Input::Kind::shape,
                      input.dimension, value)) {
      return false;
    }
    words[w++] = static_cast<uint64_t>(value);
  }
  return true;
}

}  // namespace jitwarm::gpu
