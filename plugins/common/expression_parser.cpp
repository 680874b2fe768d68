// Parsing: the tokenizer and recursive-descent parser of the expression
// language, which type-checks as it goes (every error names its column),
// and what of a launch expression varies per launch.
#include <jitwarm/plugin.hpp>

#include "expression_syntax.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

namespace jitwarm::gpu::expr {
namespace {

const char* type_name(ExprType t) {
  switch (t) {
    case ExprType::integer: return "an integer";
    case ExprType::boolean: return "a boolean";
    case ExprType::text: return "a text";
  }
  return "?";
}

class ExpressionParser {
 public:
  ExpressionParser(std::string_view text, const ExprNames& names,
                   ExprScope scope, Tree& out)
      : text_(text), names_(names), scope_(scope), out_(out) {}

  uint32_t parse() {
    const uint32_t root = parse_or();
    skip_space();
    if (pos_ != text_.size()) error(pos_, "unexpected '" + rest() + "'");
    return root;
  }

 private:
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
    out_.nodes.push_back(node);
    return static_cast<uint32_t>(out_.nodes.size() - 1);
  }
  uint32_t node_with(Node node, std::span<const uint32_t> children) {
    node.first_child = static_cast<uint32_t>(out_.children.size());
    node.child_count = static_cast<uint32_t>(children.size());
    out_.children.insert(out_.children.end(), children.begin(), children.end());
    return add(node);
  }
  ExprType type_of(uint32_t node) const { return out_.nodes[node].type; }
  void require_type(uint32_t node, ExprType type, const std::string& what) {
    if (type_of(node) != type) {
      error(out_.nodes[node].column - 1, what + " must be " + type_name(type) +
                                             ", not " +
                                             type_name(type_of(node)));
    }
  }

  uint32_t binary(uint32_t left, uint32_t right, BinaryOp op,
                  std::size_t start) {
    Node n;
    n.kind = kBinary;
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
      n.kind = kNot;
      n.type = ExprType::boolean;
      n.column = static_cast<uint32_t>(start + 1);
      const std::array<uint32_t, 1> kids{operand};
      return node_with(n, kids);
    }
    if (accept("-")) {
      const uint32_t operand = parse_unary();
      require_type(operand, ExprType::integer, "the operand of -");
      Node n;
      n.kind = kNegate;
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
      n.kind = kConstant;
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
      n.kind = kConstant;
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
      n.kind = kConstant;
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
      n.kind = kLet;
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
    n.kind = kParam;
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
        const Arg want = argument_kind(*f, args.size());
        args.push_back(parse_argument(*f, want, arg_start));
        if (accept(")")) break;
        expect(",");
      }
    }
    return call_node(*f, start, args);
  }

  // A parameter name where the function wants one, else an expression.
  uint32_t parse_argument(const FunctionInfo& f, Arg want, std::size_t start) {
    if (!names_a_parameter(want)) return parse_or();
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
    n.kind = kParam;
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
    n.kind = kCall;
    n.function = f.function;
    n.type = f.result;
    n.column = static_cast<uint32_t>(start + 1);
    n.length = static_cast<uint32_t>(pos_ - start);
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg want = argument_kind(f, i);
      const std::string what =
          "argument " + std::to_string(i + 1) + " of " + f.name + "()";
      if (want == Arg::integer) require_type(args[i], ExprType::integer, what);
      if (want == Arg::boolean) require_type(args[i], ExprType::boolean, what);
      if (want == Arg::dtype) {
        const Node& a = out_.nodes[args[i]];
        if (a.kind != kConstant || a.type != ExprType::text) {
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
  Tree& out_;
  std::size_t pos_ = 0;
};

// Whether node `index` can differ between launches of one prepared launch
// (KernelExpression::varies_per_launch says what does not).
bool varies(const Tree& tree, uint32_t index, const ExprNames& names) {
  const Node& n = tree.node(index);
  const auto any_child = [&](bool tensors_too) {
    for (uint32_t k = 0; k < n.child_count; ++k) {
      const uint32_t c = tree.child(n, k);
      const Node& child = tree.node(c);
      // A tensor named as an argument (dtype_bytes(x), is_dtype(x, ..)):
      // its dtype is the key's. Only shape and stride read the tensor.
      if (!tensors_too && child.kind == kParam &&
          names.params[static_cast<std::size_t>(child.value)].kind ==
              JW_PARAM_TENSOR) {
        continue;
      }
      if (varies(tree, c, names)) return true;
    }
    return false;
  };
  switch (n.kind) {
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

}  // namespace

Tree parse(std::string_view text, const ExprNames& names, ExprScope scope) {
  Tree tree;
  tree.root = ExpressionParser(text, names, scope, tree).parse();
  tree.varies.resize(tree.nodes.size());
  if (scope == ExprScope::launch) {
    for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
      tree.varies[i] = varies(tree, i, names) ? 1 : 0;
    }
  }
  const Node& root = tree.node(tree.root);
  if (root.kind == kConstant && root.type == ExprType::text) {
    throw ExpressionError(root.column,
                          "a dtype name is only an argument (is_dtype)");
  }
  return tree;
}

}  // namespace jitwarm::gpu::expr
