#include "pdlaunch/plan/yaml_edit.h"

#include <gtest/gtest.h>

#include <string>

#include "pdlaunch/base/errors.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

// A config in the shape of PaddleMIX's and PaddleDetection's YAML files.
constexpr const char* kConfig =
    "# Trainer settings\n"
    "Global:\n"
    "  micro_batch_size: 1   # per device\n"
    "  seed: 42\n"
    "  'output dir': ./out\n"
    "\n"
    "Distributed:\n"
    "  dp_degree: 1\n"
    "  sharding:\n"
    "    sharding_stage: \"stage1\"\n"
    "    offload: false\n"
    "Model:\n"
    "  layers: [1, 2]\n"
    "  recompute:\n"
    "  name: llama\n";

TEST(YamlEditTest, ChangesOnlyTheLineOfTheKeyKeepingItsComment) {
  const std::string edited = SetYamlValue(kConfig, "Global.micro_batch_size", "4");
  std::string expected = kConfig;
  expected.replace(expected.find("micro_batch_size: 1"), 19, "micro_batch_size: 4");
  EXPECT_EQ(edited, expected);
  EXPECT_EQ(SetYamlValue(kConfig, "Distributed.sharding.sharding_stage", "\"stage2\""),
            std::string(kConfig).replace(std::string(kConfig).find("\"stage1\""), 8, "stage2"));
}

TEST(YamlEditTest, QuotedKeysNullValuesAndOneLineFlowValues) {
  EXPECT_NE(SetYamlValue(kConfig, "Global.output dir", "\"/tmp/x y\"")
                .find("  'output dir': \"/tmp/x y\"\n"),
            std::string::npos);
  EXPECT_NE(SetYamlValue(kConfig, "Model.recompute", "true").find("  recompute: true\n  name"),
            std::string::npos);
  EXPECT_NE(SetYamlValue(kConfig, "Model.layers", "[4]").find("  layers: [4]\n"),
            std::string::npos);
}

TEST(YamlEditTest, AMissingLastKeyIsAddedAtTheEndOfItsMapping) {
  // After the mapping's last line, its nested ones included; Paddle sets it there too.
  const std::string edited = SetYamlValue(kConfig, "Distributed.mp_degree", "2");
  EXPECT_NE(edited.find("    offload: false\n  mp_degree: 2\nModel:"), std::string::npos) << edited;
  EXPECT_EQ(SetYamlValue("a: 1", "b", "2"), "a: 1\nb: 2");
  EXPECT_EQ(SetYamlValue("", "a", "1"), "a: 1\n");
  EXPECT_EQ(SetYamlValue("# only a comment\n", "a", "1"), "# only a comment\na: 1\n");
  EXPECT_EQ(SetYamlValue("a:\nb: 1\n", "a.c", "3"), "a:\n  c: 3\nb: 1\n");
  // A block scalar's '#' lines are its text: the key goes after them, not inside the scalar.
  EXPECT_EQ(SetYamlValue("a: |\n  text\n  # not a comment\n", "b", "1"),
            "a: |\n  text\n  # not a comment\nb: 1\n");
  EXPECT_EQ(SetYamlValue("m:\n  s: >-\n    one\n\n    # two\n# a real comment\nn: 1\n", "m.t", "2"),
            "m:\n  s: >-\n    one\n\n    # two\n  t: 2\n# a real comment\nn: 1\n");
  EXPECT_EQ(SetYamlValue("l:\n- |\n  # text\n", "k", "1"), "l:\n- |\n  # text\nk: 1\n");
  EXPECT_EQ(SetYamlValue("a: !!str |\n  x\n  # text\n", "b", "1"),
            "a: !!str |\n  x\n  # text\nb: 1\n");
}

TEST(YamlEditTest, WhatItDoesNotRewriteIsOneLineNamingTheKeyAndLine) {
  const auto error = [](const std::string& text, const std::string& key) {
    return ErrorOf<LaunchError>([&] { SetYamlValue(text, key, "1"); });
  };
  EXPECT_EQ(error(kConfig, "Optimizer.lr"),
            "Optimizer.lr: no such key in the file (Optimizer is not there)");
  EXPECT_EQ(error(kConfig, "Distributed.sharding"),
            "Distributed.sharding: a mapping or list, not a value: give the key of a value in "
            "it (line 9)");
  EXPECT_EQ(error(kConfig, "Global.seed.x"),
            "Global.seed: a value, not a mapping: no key under it (line 4)");
  EXPECT_EQ(error("base: &b\n  x: 1\nother: *b\n", "base.x"),
            "base: an anchor, alias or tag is not rewritten (the file would change meaning) "
            "(line 1)");
  EXPECT_EQ(error("a: |\n  text\n", "a"), "a: a block scalar is not rewritten (line 1)");
  EXPECT_EQ(error("a: {b: 1}\n", "a.b"),
            "a: a flow collection on the way to a key is not rewritten (line 1)");
  EXPECT_EQ(error("a: [1,\n  2]\n", "a"),
            "a: a flow collection over several lines is not rewritten (line 1)");
  EXPECT_EQ(error("a:\n\tb: 1\n", "a.b"), "a: a tab in the indentation is not read (line 2)");
  EXPECT_EQ(error("a: 1\n---\nb: 2\n", "a"), "a: the file has several YAML documents (line 2)");
  EXPECT_EQ(error("- a\n- b\n", "a"), "a: the file's top level is not a mapping (line 1)");
  EXPECT_EQ(error("a:\n- x\n- y\nb: 1\n", "a"),
            "a: a mapping or list, not a value: give the key of a value in it (line 1)");
  EXPECT_EQ(error("a: 1\nb: 2\na: 3\n", "a"),
            "a: the key is twice in its mapping (YAML keeps the last) (line 3)");
  EXPECT_EQ(error("a: a long plain\n  string folded\nb: 1\n", "a"),
            "a: a value over several lines is not rewritten (line 1)");
  EXPECT_EQ(error("a: \"open\n  quote\"\n", "a"),
            "a: a value over several lines is not rewritten (line 1)");
}

TEST(YamlEditTest, ADocumentStartCrLfAndNoLastNewlineAreKept) {
  EXPECT_EQ(SetYamlValue("---\na: 1\n", "a", "2"), "---\na: 2\n");
  EXPECT_EQ(SetYamlValue("a:\r\n  b: 1\r\n", "a.b", "2"), "a:\r\n  b: 2\r\n");
  EXPECT_EQ(SetYamlValue("a:\r\n  b: 1\r\n", "a.c", "2"), "a:\r\n  b: 1\r\n  c: 2\r\n");
  EXPECT_EQ(SetYamlValue("a: 1", "a", "2"), "a: 2");
  EXPECT_EQ(SetYamlValue("a:   # later\n", "a", "2"), "a: 2   # later\n");
}

TEST(YamlEditTest, ValuesAreWrittenSoThatYamlReadsThemBackAsTheyWere) {
  EXPECT_EQ(YamlValue("4"), "4");
  EXPECT_EQ(YamlValue("true"), "true");
  EXPECT_EQ(YamlValue("null"), "null");
  EXPECT_EQ(YamlValue("\"full_attn\""), "full_attn");
  EXPECT_EQ(YamlValue("\"stage2\""), "stage2");
  // Strings YAML would read as something else stay quoted.
  EXPECT_EQ(YamlValue("\"True\""), "\"True\"");
  EXPECT_EQ(YamlValue("\"off\""), "\"off\"");
  EXPECT_EQ(YamlValue("\"01\""), "\"01\"");
  EXPECT_EQ(YamlValue("\"a: b\""), "\"a: b\"");
  EXPECT_EQ(YamlValue("\"\""), "\"\"");
  // Floats as PyYAML (YAML 1.1) reads them: a '.' and a signed exponent.
  EXPECT_EQ(YamlValue("1e-05"), "1.0e-05");
  EXPECT_EQ(YamlValue("0.5"), "0.5");
  EXPECT_EQ(YamlValue("1.5e+20"), "1.5e+20");
  EXPECT_EQ(YamlValue("{\"mlp_row_ln\":2,\"attention_row_ln\":0}"),
            "{\"mlp_row_ln\":2,\"attention_row_ln\":0}");
}

}  // namespace
}  // namespace pdlaunch
