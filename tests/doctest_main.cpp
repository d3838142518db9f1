// The main() of every doctest executable.
//
// ctest runs each case as `test_x --test-case=<name>` (doctest_discover_tests). A name the filter
// cannot match — a ';' in it splits the ctest entry in two — would run zero cases and "pass". So a
// run given a --test-case filter that selects nothing fails, naming the filter.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

int g_cases_selected = -1;  // set by the listener at the end of a run; -1: no run happened

struct count_selected : doctest::IReporter {
  explicit count_selected(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override {
    g_cases_selected = static_cast<int>(s.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("count_selected", 1, count_selected);

}  // namespace

int main(int argc, char** argv) {
  std::string_view filter;
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--test-case=", 0) == 0 || a.rfind("-tc=", 0) == 0) filter = a.substr(a.find('=') + 1);
    if (a.rfind("--list", 0) == 0 || a.rfind("-ltc", 0) == 0 || a.rfind("-lts", 0) == 0) listing = true;
  }
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || listing) return rc;
  if (!filter.empty() && g_cases_selected == 0) {
    std::fprintf(stderr, "error: --test-case=%.*s selects no test case (a ';' in a test name splits its ctest entry)\n",
                 static_cast<int>(filter.size()), filter.data());
    return rc != 0 ? rc : 3;
  }
  return rc;
}
