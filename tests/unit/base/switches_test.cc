// The launcher's switches (pdlaunch/base/switches.h): how a value reads, and that docs/env.md
// documents every one.
#include "pdlaunch/base/switches.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "support/scoped_env.h"

namespace pdlaunch {
namespace {

using testutil::ScopedEnv;

TEST(SwitchesTest, UnsetAndEmptyAreTheSameAndZeroIsOff) {
  {
    const ScopedEnv unset("PDLAUNCH_NO_CGROUP", std::nullopt);
    EXPECT_EQ(ReadSwitch(Switch::kNoCgroup), std::nullopt);
    EXPECT_FALSE(SwitchOn(Switch::kNoCgroup));
  }
  {
    const ScopedEnv empty("PDLAUNCH_NO_CGROUP", "");
    EXPECT_EQ(ReadSwitch(Switch::kNoCgroup), std::nullopt);
    EXPECT_FALSE(SwitchOn(Switch::kNoCgroup));
  }
  {
    const ScopedEnv zero("PDLAUNCH_NO_CGROUP", "0");
    EXPECT_EQ(ReadSwitch(Switch::kNoCgroup), "0");
    EXPECT_FALSE(SwitchOn(Switch::kNoCgroup));
  }
  const ScopedEnv one("PDLAUNCH_NO_CGROUP", "1");
  EXPECT_TRUE(SwitchOn(Switch::kNoCgroup));
  const ScopedEnv lock("PDLAUNCH_PORT_LOCK_FILE", "/tmp/x.lock");
  EXPECT_EQ(ReadSwitch(Switch::kPortLockFile), "/tmp/x.lock");  // Read now, not at start-up.
}

TEST(SwitchesTest, EverySwitchHasItsOwnNameAndARowInTheDocs) {
  std::ifstream in(std::string(PDLAUNCH_TEST_SOURCE_DIR) + "/../docs/env.md");
  ASSERT_TRUE(in) << "docs/env.md";
  const std::string docs{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::set<std::string> names;
  for (const SwitchInfo& info : kSwitches) {
    const std::string name = info.name;
    EXPECT_TRUE(name.starts_with("PDLAUNCH_")) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(SwitchName(info.which), name);
    EXPECT_NE(docs.find("| `" + name + "` |"), std::string::npos)
        << name << " has no row in docs/env.md, \"What the launcher reads\"";
  }
}

}  // namespace
}  // namespace pdlaunch
