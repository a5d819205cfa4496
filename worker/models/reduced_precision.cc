// Reduced precision as graph rewrites of a frozen TorchScript module. Why rewrites and not
// autocast or Module::to: the packages are frozen (their weights are graph constants, which
// Module::to does not see), and CPU autocast in LibTorch 1.13 feeds bfloat16 activations to the
// fused transformer layer with float weights, which fails. Why not quantize_dynamic: the C++ API
// has none, and it needs the unfrozen Python module.
#include "worker/models/reduced_precision.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnaserve::worker {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// Which inputs of an op carry tensors that bf16 converts: `activation_inputs` are cast at run
// time; any other input that is a constant float tensor is converted once.
struct Bf16Op {
  const char* name;
  std::vector<size_t> activation_inputs;
};

const std::vector<Bf16Op>& Bf16Ops() {
  static const std::vector<Bf16Op> ops = {
      {"aten::linear", {0}},     {"aten::conv1d", {0}},        {"aten::conv2d", {0}},
      {"aten::matmul", {0, 1}},  {"aten::mm", {0, 1}},         {"aten::bmm", {0, 1}},
      {"aten::addmm", {0, 1, 2}}, {"aten::baddbmm", {0, 1, 2}},
      // The fused encoder layer (nn.TransformerEncoderLayer's inference fast path): its source,
      // and every weight; the mask (input 18) is left as it is.
      {"aten::_transformer_encoder_layer_fwd", {0}},
      // nn.MultiheadAttention's fast path (query, key, value); its second output, the attention
      // weights, is left in bf16 (the fast path returns it only when asked, never here).
      {"aten::_native_multi_head_attention", {0, 1, 2}},
  };
  return ops;
}

const Bf16Op* FindBf16Op(const Node* node) {
  for (const auto& op : Bf16Ops()) {
    if (node->kind().toQualString() == std::string(op.name)) return &op;
  }
  return nullptr;
}

std::optional<at::Tensor> FloatConstant(Value* value) {
  if (value->node()->kind() != c10::prim::Constant) return std::nullopt;
  auto ivalue = torch::jit::toIValue(value);
  if (!ivalue || !ivalue->isTensor()) return std::nullopt;
  at::Tensor t = ivalue->toTensor();
  if (t.scalar_type() != at::kFloat) return std::nullopt;
  return t;
}

// `value` as `dtype` (aten::to), inserted before `before`.
Value* InsertCast(Graph* graph, Value* value, at::ScalarType dtype, Node* before) {
  torch::jit::WithInsertPoint guard(before);
  return graph->insert(c10::aten::to, {value, dtype});
}

// Every node of the graph, nested blocks included, collected first so rewriting cannot disturb
// the walk.
std::vector<Node*> AllNodes(const std::shared_ptr<Graph>& graph) {
  std::vector<Node*> out;
  std::vector<torch::jit::Block*> blocks = {graph->block()};
  while (!blocks.empty()) {
    torch::jit::Block* block = blocks.back();
    blocks.pop_back();
    for (Node* node : block->nodes()) {
      out.push_back(node);
      for (auto* sub : node->blocks()) blocks.push_back(sub);
    }
  }
  return out;
}

bool HasQuantizedOps(const std::shared_ptr<Graph>& graph) {
  for (const Node* node : AllNodes(graph)) {
    if (std::string(node->kind().ns().toUnqualString()) == "quantized") return true;
  }
  return false;
}

// A module exported in bfloat16 (scripts/export_hf_bert.py --precision bf16): its weights are
// bf16 graph constants and its activations follow them.
bool HasBf16Weights(const std::shared_ptr<Graph>& graph) {
  for (const Node* node : AllNodes(graph)) {
    if (node->kind() != c10::prim::Constant || !node->output()->type()->cast<c10::TensorType>()) {
      continue;
    }
    auto ivalue = torch::jit::toIValue(node->output());
    if (ivalue && ivalue->isTensor() && ivalue->toTensor().scalar_type() == at::kBFloat16) {
      return true;
    }
  }
  return false;
}

// Attributes read at run time (an unfrozen module): their weights are not graph constants yet.
bool ReadsAttributes(const std::shared_ptr<Graph>& graph) {
  for (const Node* node : AllNodes(graph)) {
    if (node->kind() == c10::prim::GetAttr || node->kind() == c10::prim::CallMethod) return true;
  }
  return false;
}

int RewriteBf16(const std::shared_ptr<Graph>& graph) {
  std::unordered_map<Value*, Value*> converted;  // float constant -> its bf16 constant
  int rewritten = 0;
  for (Node* node : AllNodes(graph)) {
    const Bf16Op* op = FindBf16Op(node);
    if (op == nullptr) continue;
    bool changed = false;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      Value* input = node->input(i);
      if (auto weight = FloatConstant(input)) {
        auto& bf16 = converted[input];
        if (bf16 == nullptr) {
          torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
          bf16 = graph->insertConstant(weight->to(at::kBFloat16));
        }
        node->replaceInput(i, bf16);
        changed = true;
      } else if (std::find(op->activation_inputs.begin(), op->activation_inputs.end(), i) !=
                     op->activation_inputs.end() &&
                 input->type()->cast<c10::TensorType>()) {
        node->replaceInput(i, InsertCast(graph.get(), input, at::kBFloat16, node));
        changed = true;
      }
    }
    if (!changed) continue;
    {
      Value* output = node->output(0);
      Value* as_float = InsertCast(graph.get(), output, at::kFloat, node->next());
      output->replaceAllUsesWith(as_float);
      as_float->node()->replaceInput(0, output);  // the cast itself reads the bf16 result
    }
    ++rewritten;
  }
  return rewritten;
}

// Symmetric per-output-channel int8 weights (row r's scale = max |w_r| / 127), packed for the
// current quantized engine by quantized::linear_prepack (called boxed: its packed-params class
// is not in LibTorch's public headers).
c10::IValue PackInt8Linear(const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  at::Tensor scales =
      std::get<0>(weight.abs().max(/*dim=*/1)).div(127.0).clamp_min(1e-12).to(at::kDouble);
  at::Tensor zero_points = at::zeros({weight.size(0)}, at::kLong);
  at::Tensor qweight =
      at::quantize_per_channel(weight.contiguous(), scales, zero_points, 0, at::kQInt8);
  static const auto prepack =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  torch::jit::Stack stack{qweight, bias ? c10::IValue(*bias) : c10::IValue()};
  prepack.callBoxed(&stack);
  return stack.at(0);
}

int RewriteInt8(const std::shared_ptr<Graph>& graph) {
  const auto linear_dynamic = c10::Symbol::fromQualString("quantized::linear_dynamic");
  int rewritten = 0;
  for (Node* node : AllNodes(graph)) {
    if (node->kind() != c10::aten::linear) continue;
    auto weight = FloatConstant(node->input(1));
    if (!weight || weight->dim() != 2) continue;
    c10::optional<at::Tensor> bias;
    if (node->inputs().size() > 2 && !node->input(2)->type()->cast<c10::NoneType>()) {
      auto constant_bias = FloatConstant(node->input(2));
      if (!constant_bias) continue;  // a computed bias: leave this Linear in fp32
      bias = *constant_bias;
    }
    torch::jit::WithInsertPoint guard(node);
    Value* packed = graph->insertConstant(PackInt8Linear(*weight, bias));
    Value* out = graph->insert(linear_dynamic, {node->input(0), packed});
    node->output()->replaceAllUsesWith(out);
    node->destroy();
    ++rewritten;
  }
  return rewritten;
}

std::string FirstLine(const char* what) {
  std::string text(what ? what : "");
  size_t newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

}  // namespace

PrecisionSupport DetectPrecisionSupport() {
  PrecisionSupport support;
  support.cuda = false;  // modules are loaded onto the CPU (see CudaPrecision in README)
  __builtin_cpu_init();
  support.cpu_bf16 =
      __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
  for (at::QEngine engine : at::globalContext().supportedQEngines()) {
    if (engine != at::QEngine::NoQEngine) support.quantized_engine = true;
  }
  return support;
}

StatusOr<PrecisionReport> ApplyReducedPrecision(torch::jit::Module* module, Precision precision,
                                                const PrecisionSupport& support,
                                                const std::string& what) {
  try {
    PrecisionReport report;
    if (support.cuda) {
      if (precision == Precision::kBf16) report.cuda_autocast = at::kHalf;
      return report;  // int8 on CUDA was refused by CheckPrecisionSupported
    }
    const bool int8_weights = HasQuantizedOps(module->get_method("forward").graph());
    if (int8_weights) {
      if (precision != Precision::kInt8) {
        return Internal("the weights file " + what + " holds int8-quantized ops but the manifest "
                        "says precision " + PrecisionName(precision) +
                        ": set \"precision\": \"int8\"");
      }
      report.already_int8 = true;
      return report;
    }
    if (HasBf16Weights(module->get_method("forward").graph())) {
      if (precision != Precision::kBf16) {
        return Internal("the weights file " + what + " holds bfloat16 weights but the manifest "
                        "says precision " + PrecisionName(precision) +
                        ": set \"precision\": \"bf16\"");
      }
      report.already_bf16 = true;  // runs as exported: nothing to rewrite
      return report;
    }
    if (precision == Precision::kFp32) return report;
    // Freezing turns attributes into graph constants (a no-op for already-frozen packages).
    if (ReadsAttributes(module->get_method("forward").graph())) {
      module->eval();
      *module = torch::jit::freeze(*module);
    }
    auto graph = module->get_method("forward").graph();
    report.rewritten_ops =
        precision == Precision::kBf16 ? RewriteBf16(graph) : RewriteInt8(graph);
    if (report.rewritten_ops == 0) {
      return Internal("precision " + std::string(PrecisionName(precision)) + " found nothing to " +
                      "convert in " + what + " (no " +
                      (precision == Precision::kBf16 ? "linear, conv or matmul ops"
                                                     : "Linear layers with constant weights") +
                      ")");
    }
    return report;
  } catch (const c10::Error& e) {
    return Internal("cannot apply precision " + std::string(PrecisionName(precision)) + " to " +
                    what + ": " + FirstLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Internal("cannot apply precision " + std::string(PrecisionName(precision)) + " to " +
                    what + ": " + FirstLine(e.what()));
  }
}

CudaAutocastScope::CudaAutocastScope(std::optional<at::ScalarType> dtype) {
  if (!dtype) return;
  active_ = true;
  was_enabled_ = at::autocast::is_enabled();
  previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
  at::autocast::set_autocast_gpu_dtype(*dtype);
  at::autocast::set_enabled(true);
}

CudaAutocastScope::~CudaAutocastScope() {
  if (!active_) return;
  at::autocast::set_enabled(was_enabled_);
  at::autocast::set_autocast_gpu_dtype(previous_dtype_);
}

}  // namespace dnaserve::worker
