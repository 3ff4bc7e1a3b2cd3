#include "pdlaunch/process/console_echo.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

// Issue #29 item 5: progress bars and partial lines on the echo (docs/cli.md, "Console").
TEST(EchoMuxTest, AnUnprefixedSourceGoesThroughAsWritten) {
  EchoMux mux({""});
  EXPECT_EQ(mux.Feed(0, "epoch 1 ", 0), "epoch 1 ");
  EXPECT_EQ(mux.Feed(0, " 10%\r 20%\r", 0.1), " 10%\r 20%\r");
  EXPECT_EQ(mux.Feed(0, "100%\n", 0.2), "100%\n");
  EXPECT_FALSE(mux.NextQuiet(0.5));
  EXPECT_EQ(mux.Finish(), "");
}

TEST(EchoMuxTest, AnUnprefixedLineLeftOpenIsEndedBeforeTheLauncherWritesOn) {
  // A rank killed between its text and its newline (Python -u writes print's end apart): the
  // launcher's next line must not continue it (an auto tuner's trial line did, on a node whose
  // rank was stopped by another node's failure).
  EchoMux mux({""});
  EXPECT_EQ(mux.Feed(0, "layout dp8 mp1", 0), "layout dp8 mp1");
  EXPECT_EQ(mux.EndLine(), "\n");
  EXPECT_EQ(mux.EndLine(), "");
  EXPECT_EQ(mux.Feed(0, "loss 1.0", 0.1), "loss 1.0");
  // At the end the console keeps the bytes exactly; the launcher is told to end the line
  // before one of its own (EndOpenConsoleLine).
  EXPECT_EQ(mux.Finish(), "");
  EXPECT_TRUE(mux.LeftLineOpen());
  EchoMux ended({""});
  EXPECT_EQ(ended.Feed(0, "done\n", 0), "done\n");
  EXPECT_EQ(ended.EndLine(), "");
  EXPECT_EQ(ended.Finish(), "");
  EXPECT_FALSE(ended.LeftLineOpen());
  EXPECT_TRUE(ended.Fed());
  EXPECT_FALSE(EchoMux({""}).Fed());
}

TEST(EchoMuxTest, EveryRedrawOfAPrefixedBarKeepsItsPrefix) {
  EchoMux mux({"[rank 0]: ", "[rank 1]: "});
  // A '\r' at the very end of what was read may be half of "\r\n": held for the next byte.
  EXPECT_EQ(mux.Feed(0, " 10%\r 20%\r", 0), "[rank 0]:  10%\r");
  EXPECT_EQ(mux.Feed(0, "100%\n", 0.1), "[rank 0]:  20%\r[rank 0]: 100%\n");
  // "\r\n" ends a line as "\n" does, also when it comes in two reads.
  EXPECT_EQ(mux.Feed(1, "a\r", 0.2), "");
  EXPECT_EQ(mux.Feed(1, "\nb\r\n", 0.2), "[rank 1]: a\r\n[rank 1]: b\r\n");
}

TEST(EchoMuxTest, ABarThatStartsEachRedrawWithACarriageReturn) {
  // tqdm's way: "\r" + the bar, the bar's end is the next redraw's "\r" (or the quiet time).
  EchoMux mux({"[rank 0]: "});
  EXPECT_EQ(mux.Feed(0, "\r 10%", 0), "\r");
  EXPECT_EQ(mux.Feed(0, "\r 20%", 0.1), "[rank 0]:  10%\r");
  EXPECT_EQ(mux.FlushQuiet(0.6, 0.5), "[rank 0]:  20%");
  EXPECT_EQ(mux.Feed(0, "\r 30%\n", 0.7), "\r[rank 0]:  30%\n");
}

TEST(EchoMuxTest, AnotherProcessEndsTheLineABarLeftOpen) {
  EchoMux mux({"[rank 0]: ", "[rank 1]: "});
  EXPECT_EQ(mux.Feed(0, " 30%\r\r", 0), "[rank 0]:  30%\r");
  EXPECT_EQ(mux.Feed(1, "hello\n", 0.1), "\n[rank 1]: hello\n");
  EXPECT_EQ(mux.Feed(0, " 40%\r\r", 0.2), "\r[rank 0]:  40%\r");
  EXPECT_EQ(mux.Finish(), "\r\n");
}

TEST(EchoMuxTest, APartialLineIsShownAfterAQuietTimeAndContinuedWithoutPrefix) {
  EchoMux mux({"[rank 0]: ", "[rank 1]: "});
  EXPECT_EQ(mux.Feed(0, "loading... ", 10.0), "");
  EXPECT_EQ(*mux.NextQuiet(0.5), 10.5);
  EXPECT_EQ(mux.FlushQuiet(10.4, 0.5), "");
  EXPECT_EQ(mux.FlushQuiet(10.5, 0.5), "[rank 0]: loading... ");
  EXPECT_FALSE(mux.NextQuiet(0.5));
  EXPECT_EQ(mux.Feed(0, "done\n", 11.0), "done\n");
  // Interrupted by another process: the open line ends first, the rest gets its prefix again.
  EXPECT_EQ(mux.Feed(0, "saving ", 12.0), "");
  EXPECT_EQ(mux.FlushQuiet(13.0, 0.5), "[rank 0]: saving ");
  EXPECT_EQ(mux.Feed(1, "step 7\n", 13.1), "\n[rank 1]: step 7\n");
  EXPECT_EQ(mux.Feed(0, "saved\n", 13.2), "[rank 0]: saved\n");
}

TEST(EchoMuxTest, FinishShowsWhatIsHeldAndEndsAnOpenPrefixedLine) {
  EchoMux mux({"[rank 0]: ", "[rank 1]: "});
  EXPECT_EQ(mux.Feed(0, "a\nno newline", 0), "[rank 0]: a\n");
  EXPECT_EQ(mux.Feed(1, "tail", 0), "");
  EXPECT_EQ(mux.Finish(), "[rank 0]: no newline\n[rank 1]: tail\n");
  EXPECT_EQ(mux.Finish(), "");
}

TEST(EchoMuxTest, EndLineClosesAnOpenLineForSomethingElse) {
  EchoMux mux({"[rank 0]: "});
  EXPECT_EQ(mux.EndLine(), "");
  EXPECT_EQ(mux.Feed(0, "loading... ", 0), "");
  EXPECT_EQ(mux.FlushQuiet(1, 0.5), "[rank 0]: loading... ");
  EXPECT_EQ(mux.EndLine(), "\n");  // Before a failed process's tail, say.
  EXPECT_EQ(mux.EndLine(), "");
  EXPECT_EQ(mux.Feed(0, "done\n", 2), "[rank 0]: done\n");
}

TEST(EchoMuxTest, ByteByByteNeverSplicesTwoProcesses) {
  EchoMux mux({"[a]: ", "[b]: "});
  const std::string a = "one\ntwo\r\n 5%\r 9%\rlast";
  const std::string b = "x\ny\n";
  std::string out;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size()) out += mux.Feed(0, a.substr(i, 1), 0);
    if (i < b.size()) out += mux.Feed(1, b.substr(i, 1), 0);
  }
  out += mux.Finish();
  EXPECT_EQ(out, "[b]: x\n[a]: one\n[b]: y\n[a]: two\r\n[a]:  5%\r[a]:  9%\r[a]: last\n");
}

}  // namespace
}  // namespace pdlaunch
