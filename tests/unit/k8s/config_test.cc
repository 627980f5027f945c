#include "k8s/config.h"

#include "test_certs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace berth::k8s {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A fresh directory under $TMPDIR, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "berth-config-test-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Path(const std::string& rel) const { return (fs::path(path_) / rel).string(); }

  // Writes `content` to `rel` (creating folders) and returns the full path.
  std::string Write(const std::string& rel, const std::string& content) const {
    fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    EXPECT_TRUE(out.good()) << "cannot write " << p;
    return p.string();
  }

 private:
  std::string path_;
};

// Sets (or unsets, with nullopt) an environment variable for the scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Payloads and their base64 (as `base64 -w0` prints them). The CA is a real certificate: a CA
// that holds none is refused.
constexpr const char* kCaPem = testcerts::kCaA;
constexpr const char* kCaPemB64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURGekNDQWYrZ0F3SUJBZ0lVVmtGYS9sWC91OXMrSG5VbDJ3RlRIZUwyRTY0d0RRWUpLb1pJaHZjTkFRRUwKQlFBd0dqRVlNQllHQTFVRUF3d1BZbVZ5ZEdnZ2RHVnpkQ0JEUVNCQk1DQVhEVEkyTVRFeU16SXdOVEEwTjFvWQpEekl4TWpZeE1ETXdNakExTURRM1dqQWFNUmd3RmdZRFZRUUREQTlpWlhKMGFDQjBaWE4wSUVOQklFRXdnZ0VpCk1BMEdDU3FHU0liM0RRRUJBUVVBQTRJQkR3QXdnZ0VLQW9JQkFRREl4L1pxY1p6RVJtSGJaaGZ6SVpuRmgyOU0KQ0oyK3V6YlZXK1RNKzhFQ1Vwak9jTGh0Q1lhMGI1VVdJM2R4L0lMQ2JuUzAzMFB2YmtVc2VtRHVDWlpidC82QQp0Uy81c3BnaVY2TTM1NUlZQ0xJREUvMFRwUGZJOVdKV1ZyTFBlZFY3emFDUDNzWHRxZm9BTS8rd1hrdzNJdTdkCjFTdysrcFZ5UTFISnVPOG1ETW9iZEJLQ1dXUkxKS3NCdE05bTl2RlBEOW5NbUsrQ0FNWXlFVVp2Wk4xNko1UnYKNnFmNWRGNTJYa040ckEwZnFHZEF6c3ovTHlzS0JJdVJVWUtENnc4clhESE1EM3NVVmhlK2E2Z3o3NHdoeXpXeApJT1E0UTNOaURZMWhsWHhNUW94U1pjQ1p6MFY1U1RpaURnRlJJQmRlLzVNcCtXOXVhU2FQTzY4THJURy9BZ01CCkFBR2pVekJSTUIwR0ExVWREZ1FXQkJSeU5zc1FSNUgxQVNaL1hUWDNXZnpwSlBSem9UQWZCZ05WSFNNRUdEQVcKZ0JSeU5zc1FSNUgxQVNaL1hUWDNXZnpwSlBSem9UQVBCZ05WSFJNQkFmOEVCVEFEQVFIL01BMEdDU3FHU0liMwpEUUVCQ3dVQUE0SUJBUUMrdDNXTjNobmJCQUxCUWxKUk9lVXBLK1lyajdYd3dBd1NScEdkSDJSNXdVMVR3MmEzCkZ0d29yVmRqWWlpTUpjalBtb0Z6SlQ4NTJFLzB5blpzbDRTU3BZaUNLbEJDbkhSRmdNK0g0aFljY29XRlZ3ek4KTkwzbUovZHJNd0xSOWpPcFdoMHJZNXo3RzJxYnVpak5UWlNvVzdjLzE2T0hUSlo1c2RPaUo1R3hkVEhMdU44UwpmTnMyWDN4VTZTM1BTdEk2UDVRQ3U1MlFvMEgrOUdkL3VvbkRqSUYzUnZ6ZmV5TEIzZzZjNVRud3IxbktpMjlsCjRyNzdVVDZrYm1iNDk2eU94WjFtMVR5a2FMbXFBdmVyb1FZbkZwYUpGb1BBenRtSjg4L0gwNVB5OG4reW8xYWMKVUxCellna2FBVXpEK3haY2JJUzdJZE9VWnVmeVFuNS9Xend3Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K";
constexpr const char* kCertPem = "client-cert\n";
constexpr const char* kCertPemB64 = "Y2xpZW50LWNlcnQK";
constexpr const char* kKeyPem = "client-key\n";
constexpr const char* kKeyPemB64 = "Y2xpZW50LWtleQo=";

// A one-cluster, one-user, one-context kubeconfig with `user_body` as the user's fields and
// `cluster_extra` appended to the cluster's fields.
std::string Kubeconfig(const std::string& user_body, const std::string& cluster_extra = {},
                       const std::string& context_extra = {}) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "current-context: dev\n"
         "clusters:\n"
         "- name: dev-cluster\n"
         "  cluster:\n"
         "    server: https://dev.example:6443\n" +
         cluster_extra +
         "users:\n"
         "- name: dev-user\n"
         "  user:\n" +
         user_body +
         "contexts:\n"
         "- name: dev\n"
         "  context:\n"
         "    cluster: dev-cluster\n"
         "    user: dev-user\n" +
         context_extra;
}

std::string TokenOf(const ClientConfig& cfg) { return cfg.token ? cfg.token->Token() : std::string("<no token source>"); }

// ---------------------------------------------------------------------------------------------
// Base64Decode

TEST(Base64DecodeTest, DecodesStandardAlphabetWithOrWithoutPadding) {
  struct Case {
    std::string in, want;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"YQ==", "a"},
      {"YWI=", "ab"},
      {"YWJj", "abc"},
      {"YQ", "a"},  // padding is optional
      {"YWI", "ab"},
      {"aGVsbG8gd29ybGQ=", "hello world"},
      {"aGVsbG8gd29ybGQ", "hello world"},
      {"aGVs\nbG8g\r\nd29y bGQ=\t", "hello world"},  // whitespace (PEM-style line breaks) ignored
      {"+/8=", std::string("\xfb\xff", 2)},           // both non-alphanumeric characters
      {"AAEC", std::string("\x00\x01\x02", 3)},       // NUL bytes survive
      {kCaPemB64, kCaPem},
      {kCertPemB64, kCertPem},
      {kKeyPemB64, kKeyPem},
  };
  for (const Case& c : cases) {
    auto got = Base64Decode(c.in);
    ASSERT_TRUE(got.ok()) << "input \"" << c.in << "\": " << got.status().message();
    EXPECT_EQ(got.value(), c.want) << "input \"" << c.in << "\"";
  }
}

TEST(Base64DecodeTest, RejectsInvalidInput) {
  const std::vector<std::string> cases = {
      "aGV*bG8=",  // not in the alphabet
      "aGVsbG8-",  // URL-safe alphabet is not the standard one
      "aGVsbG8_",
      "YQ==YQ==",  // data after padding
      "YQ=x",
      "Y",         // a lone character cannot encode a byte: truncated data
      "YWJjZ",     // same, after a whole group
      "\xc3\xa9",  // non-ASCII
  };
  for (const std::string& in : cases) {
    auto got = Base64Decode(in);
    EXPECT_FALSE(got.ok()) << "input \"" << in << "\" decoded to \"" << (got.ok() ? got.value() : "") << "\"";
    if (!got.ok()) {
      EXPECT_THAT(got.status().message(), HasSubstr("base64"));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// LoadKubeconfig: a single file

TEST(LoadKubeconfigTest, UsesCurrentContextWithStaticToken) {
  TempDir dir;
  std::string path = dir.Write("config", Kubeconfig("    token: s3cret\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->server, "https://dev.example:6443");
  EXPECT_EQ(TokenOf(*cfg), "s3cret");
  EXPECT_EQ(cfg->default_namespace, "default");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  EXPECT_EQ(cfg->ca_pem, "");
  EXPECT_EQ(cfg->client_cert_pem, "");
  EXPECT_EQ(cfg->client_key_pem, "");
}

TEST(LoadKubeconfigTest, StripsTrailingSlashesFromServer) {
  TempDir dir;
  std::string path = dir.Write("config",
                               "current-context: c\n"
                               "clusters: [{name: k, cluster: {server: 'https://k.example:443//'}}]\n"
                               "contexts: [{name: c, context: {cluster: k}}]\n");
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->server, "https://k.example:443");
  // A context without a user is allowed: no credentials at all.
  EXPECT_EQ(cfg->token, nullptr);
}

constexpr const char* kTwoContexts =
    "current-context: dev\n"
    "clusters:\n"
    "- {name: dev-cluster, cluster: {server: 'https://dev.example'}}\n"
    "- {name: prod-cluster, cluster: {server: 'https://prod.example'}}\n"
    "users:\n"
    "- {name: dev-user, user: {token: dev-token}}\n"
    "- {name: prod-user, user: {token: prod-token}}\n"
    "contexts:\n"
    "- {name: dev, context: {cluster: dev-cluster, user: dev-user}}\n"
    "- {name: prod, context: {cluster: prod-cluster, user: prod-user, namespace: payments}}\n";

TEST(LoadKubeconfigTest, ContextArgumentOverridesCurrentContext) {
  TempDir dir;
  std::string path = dir.Write("config", kTwoContexts);
  struct Case {
    std::string context, server, token, ns;
  };
  const std::vector<Case> cases = {
      {"", "https://dev.example", "dev-token", "default"},
      {"dev", "https://dev.example", "dev-token", "default"},
      {"prod", "https://prod.example", "prod-token", "payments"},
  };
  for (const Case& c : cases) {
    auto cfg = LoadKubeconfig({path}, c.context);
    ASSERT_TRUE(cfg.ok()) << "context \"" << c.context << "\": " << cfg.status().message();
    EXPECT_EQ(cfg->server, c.server) << "context \"" << c.context << "\"";
    EXPECT_EQ(TokenOf(*cfg), c.token) << "context \"" << c.context << "\"";
    EXPECT_EQ(cfg->default_namespace, c.ns) << "context \"" << c.context << "\"";
  }
}

TEST(LoadKubeconfigTest, ReportsWhatIsMissingOrWrong) {
  struct Case {
    std::string name, yaml, context, want;
  };
  const std::vector<Case> cases = {
      {"unknown context", kTwoContexts, "staging", "context \"staging\" not found in kubeconfig"},
      {"unknown current-context",
       "current-context: gone\n"
       "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", "context \"gone\" not found in kubeconfig"},
      {"no current-context", "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
                             "contexts: [{name: c, context: {cluster: k}}]\n",
       "", "no current-context; pass --context"},
      {"unknown cluster",
       "current-context: c\n"
       "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
       "contexts: [{name: c, context: {cluster: other, user: u}}]\n"
       "users: [{name: u, user: {token: t}}]\n",
       "", "cluster \"other\" of context \"c\" not found in kubeconfig"},
      {"unknown user",
       "current-context: c\n"
       "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
       "contexts: [{name: c, context: {cluster: k, user: nobody}}]\n"
       "users: [{name: u, user: {token: t}}]\n",
       "", "user \"nobody\" of context \"c\" not found in kubeconfig"},
      {"cluster without server",
       "current-context: c\n"
       "clusters: [{name: k, cluster: {insecure-skip-tls-verify: true}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", "cluster \"k\" has no server"},
      {"invalid YAML", "current-context: [unclosed\n", "", "is not valid YAML"},
      {"bad certificate-authority-data", Kubeconfig("    token: t\n", "    certificate-authority-data: '***'\n"), "",
       "cluster \"dev-cluster\": certificate-authority-data: invalid base64"},
      {"missing certificate-authority file", Kubeconfig("    token: t\n", "    certificate-authority: nope.crt\n"), "",
       "cluster \"dev-cluster\": cannot read "},
      // A CA with no certificate would trust nothing (or, worse, fall back to something else).
      {"certificate-authority-data without a certificate",
       Kubeconfig("    token: t\n", "    certificate-authority-data: bm90IGEgY2VydGlmaWNhdGUK\n"), "",
       "cluster \"dev-cluster\": certificate-authority-data holds no certificate (expected PEM \"-----BEGIN "
       "CERTIFICATE-----\" blocks); it would be the only trust anchor for the API server"},
      {"certificate-authority-data with a broken certificate",
       Kubeconfig("    token: t\n", "    certificate-authority-data: "
                                     "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K\n"),
       "", "cluster \"dev-cluster\": certificate-authority-data holds no certificate"},
      {"bad client-key-data", Kubeconfig("    client-certificate-data: Y2VydA==\n    client-key-data: '!!'\n"), "",
       "user \"dev-user\": client-key-data: invalid base64"},
      {"missing client-certificate file",
       Kubeconfig("    client-certificate: missing.crt\n    client-key-data: a2V5\n"), "",
       "user \"dev-user\": cannot read "},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::string path = dir.Write("config", c.yaml);
    auto cfg = LoadKubeconfig({path}, c.context);
    ASSERT_FALSE(cfg.ok()) << c.name << ": loaded server " << cfg->server;
    EXPECT_THAT(cfg.status().message(), HasSubstr(c.want)) << c.name;
    EXPECT_EQ(cfg.status().code(), 0) << c.name;
  }
}

TEST(LoadKubeconfigTest, InvalidYamlNamesTheFile) {
  TempDir dir;
  std::string path = dir.Write("broken.yaml", "clusters: {a: [1, 2}\n");
  auto cfg = LoadKubeconfig({path});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr("kubeconfig " + path + " is not valid YAML"));
}

TEST(LoadKubeconfigTest, ASingleMissingFileIsAnError) {
  TempDir dir;
  std::string path = dir.Path("does-not-exist");
  auto cfg = LoadKubeconfig({path});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "kubeconfig " + path + " cannot be read");
}

TEST(LoadKubeconfigTest, NoPathsIsAnError) {
  auto cfg = LoadKubeconfig({});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr("no kubeconfig found"));
}

TEST(LoadKubeconfigTest, TokenFileIsRelativeToTheKubeconfigsFolder) {
  TempDir dir;
  std::string path = dir.Write("kube/config", Kubeconfig("    tokenFile: secrets/token\n"));
  dir.Write("kube/secrets/token", "file-token\n");
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(TokenOf(*cfg), "file-token");  // trailing newline trimmed
}

TEST(LoadKubeconfigTest, TokenFileMayBeAbsolute) {
  TempDir dir;
  std::string token = dir.Write("elsewhere/token", "abs-token");
  std::string path = dir.Write("kube/config", Kubeconfig("    tokenFile: " + token + "\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(TokenOf(*cfg), "abs-token");
}

TEST(LoadKubeconfigTest, StaticTokenWinsOverTokenFile) {
  TempDir dir;
  dir.Write("token", "from-file");
  std::string path = dir.Write("config", Kubeconfig("    token: inline\n    tokenFile: token\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(TokenOf(*cfg), "inline");
}

TEST(LoadKubeconfigTest, ClientCertificateAndKeyFromRelativeFiles) {
  TempDir dir;
  dir.Write("kube/pki/client.crt", kCertPem);
  dir.Write("kube/pki/client.key", kKeyPem);
  dir.Write("kube/pki/ca.crt", kCaPem);
  std::string path = dir.Write("kube/config", Kubeconfig("    client-certificate: pki/client.crt\n"
                                                         "    client-key: pki/client.key\n",
                                                         "    certificate-authority: pki/ca.crt\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->client_cert_pem, kCertPem);
  EXPECT_EQ(cfg->client_key_pem, kKeyPem);
  EXPECT_EQ(cfg->ca_pem, kCaPem);
  EXPECT_EQ(cfg->token, nullptr);
}

TEST(LoadKubeconfigTest, ClientCertificateKeyAndCaFromBase64Data) {
  TempDir dir;
  std::string path = dir.Write("config", Kubeconfig(std::string("    client-certificate-data: ") + kCertPemB64 + "\n" +
                                                        "    client-key-data: " + kKeyPemB64 + "\n",
                                                    std::string("    certificate-authority-data: ") + kCaPemB64 + "\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->client_cert_pem, kCertPem);
  EXPECT_EQ(cfg->client_key_pem, kKeyPem);
  EXPECT_EQ(cfg->ca_pem, kCaPem);
}

TEST(LoadKubeconfigTest, InlineDataWinsOverFile) {
  TempDir dir;
  dir.Write("ca.crt", "from-file");
  std::string path = dir.Write(
      "config", Kubeconfig("    token: t\n", std::string("    certificate-authority: ca.crt\n") +
                                                 "    certificate-authority-data: " + kCaPemB64 + "\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->ca_pem, kCaPem);
}

TEST(LoadKubeconfigTest, InsecureSkipTlsVerify) {
  struct Case {
    std::string extra;
    bool want;
  };
  const std::vector<Case> cases = {
      {"", false},
      {"    insecure-skip-tls-verify: true\n", true},
      {"    insecure-skip-tls-verify: false\n", false},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::string path = dir.Write("config", Kubeconfig("    token: t\n", c.extra));
    auto cfg = LoadKubeconfig({path});
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->insecure_skip_tls_verify, c.want) << "cluster extra: " << c.extra;
  }
}

TEST(LoadKubeconfigTest, DefaultNamespaceComesFromTheContext) {
  TempDir dir;
  std::string path = dir.Write("config", Kubeconfig("    token: t\n", "", "    namespace: team-a\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->default_namespace, "team-a");
}

// ---------------------------------------------------------------------------------------------
// LoadKubeconfig: several files, as KUBECONFIG=a:b

TEST(LoadKubeconfigTest, MergesFilesFirstDefinitionWins) {
  TempDir dir;
  // a: current-context "one", its own cluster "shared" and user "a-user" with a relative token file.
  std::string a = dir.Write("a/config",
                            "current-context: one\n"
                            "clusters: [{name: shared, cluster: {server: 'https://from-a'}}]\n"
                            "users: [{name: a-user, user: {tokenFile: token}}]\n"
                            "contexts: [{name: one, context: {cluster: shared, user: b-user}}]\n");
  dir.Write("a/token", "a-token");
  // b: a different current-context, a second "shared" cluster (ignored), "b-user" (used by a's
  // context), a token file relative to b's folder, and a context "two" only b defines.
  std::string b = dir.Write("b/config",
                            "current-context: two\n"
                            "clusters:\n"
                            "- {name: shared, cluster: {server: 'https://from-b'}}\n"
                            "- {name: only-b, cluster: {server: 'https://only-b'}}\n"
                            "users:\n"
                            "- {name: b-user, user: {tokenFile: token}}\n"
                            "- {name: a-user, user: {token: ignored}}\n"
                            "contexts:\n"
                            "- {name: one, context: {cluster: only-b}}\n"
                            "- {name: two, context: {cluster: only-b, user: a-user, namespace: ns-b}}\n");
  dir.Write("b/token", "b-token");

  struct Case {
    std::string context, server, token, ns;
  };
  const std::vector<Case> cases = {
      // a's current-context wins; a's context "one" wins over b's; a's cluster "shared" wins;
      // b-user comes from b and its token file is relative to b's folder.
      {"", "https://from-a", "b-token", "default"},
      // Context only b defines, pointing at a cluster only b defines, with a user that a defines first.
      {"two", "https://only-b", "a-token", "ns-b"},
  };
  for (const Case& c : cases) {
    auto cfg = LoadKubeconfig({a, b}, c.context);
    ASSERT_TRUE(cfg.ok()) << "context \"" << c.context << "\": " << cfg.status().message();
    EXPECT_EQ(cfg->server, c.server) << "context \"" << c.context << "\"";
    EXPECT_EQ(TokenOf(*cfg), c.token) << "context \"" << c.context << "\"";
    EXPECT_EQ(cfg->default_namespace, c.ns) << "context \"" << c.context << "\"";
  }

  // Reversed order: b's current-context and definitions win.
  auto rev = LoadKubeconfig({b, a});
  ASSERT_TRUE(rev.ok()) << rev.status().message();
  EXPECT_EQ(rev->server, "https://only-b");
  EXPECT_EQ(TokenOf(*rev), "ignored");
  EXPECT_EQ(rev->default_namespace, "ns-b");
}

TEST(LoadKubeconfigTest, CurrentContextComesFromALaterFileWhenEarlierOnesHaveNone) {
  TempDir dir;
  std::string a = dir.Write("a", "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
                                 "contexts: [{name: c, context: {cluster: k}}]\n");
  std::string b = dir.Write("b", "current-context: c\n");
  auto cfg = LoadKubeconfig({a, b});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->server, "https://k");
}

TEST(LoadKubeconfigTest, MissingFilesInAListAreSkipped) {
  TempDir dir;
  std::string real = dir.Write("config", Kubeconfig("    token: t\n"));
  const std::vector<std::vector<std::string>> lists = {
      {dir.Path("missing-1"), real},
      {real, dir.Path("missing-2")},
      {dir.Path("missing-1"), real, dir.Path("missing-2")},
      {"", real},  // an empty entry (KUBECONFIG=":path") is ignored
  };
  for (const auto& paths : lists) {
    auto cfg = LoadKubeconfig(paths);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->server, "https://dev.example:6443");
  }
}

TEST(LoadKubeconfigTest, AListOfOnlyMissingFilesIsAnError) {
  TempDir dir;
  auto cfg = LoadKubeconfig({dir.Path("x"), dir.Path("y")});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr("no kubeconfig found (tried 2 path(s))"));
}

TEST(LoadKubeconfigTest, InvalidYamlInAListIsAnError) {
  TempDir dir;
  std::string good = dir.Write("good", Kubeconfig("    token: t\n"));
  std::string bad = dir.Write("bad", "users: [\n");
  auto cfg = LoadKubeconfig({good, bad});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr("kubeconfig " + bad + " is not valid YAML"));
}

// ---------------------------------------------------------------------------------------------
// TokenSource

TEST(TokenSourceTest, StaticReturnsTheToken) {
  EXPECT_EQ(TokenSource::Static("abc")->Token(), "abc");
  EXPECT_EQ(TokenSource::Static("")->Token(), "");
}

TEST(TokenSourceTest, FileIsReReadAfterTheRefreshInterval) {
  TempDir dir;
  std::string path = dir.Write("token", "first\n");
  auto source = TokenSource::File(path, std::chrono::seconds(0));
  EXPECT_EQ(source->Token(), "first");
  dir.Write("token", "  second \r\n");
  EXPECT_EQ(source->Token(), "second");  // surrounding whitespace trimmed
  dir.Write("token", "third");
  EXPECT_EQ(source->Token(), "third");
}

TEST(TokenSourceTest, FileKeepsTheLastGoodTokenWhenTheFileVanishes) {
  TempDir dir;
  std::string path = dir.Write("token", "good");
  auto source = TokenSource::File(path, std::chrono::seconds(0));
  EXPECT_EQ(source->Token(), "good");
  fs::remove(path);
  EXPECT_EQ(source->Token(), "good");
  EXPECT_EQ(source->Token(), "good");
  dir.Write("token", "rotated");
  EXPECT_EQ(source->Token(), "rotated");
}

TEST(TokenSourceTest, FileIsCachedWithinTheRefreshInterval) {
  TempDir dir;
  std::string path = dir.Write("token", "cached");
  auto source = TokenSource::File(path, std::chrono::hours(1));
  EXPECT_EQ(source->Token(), "cached");
  dir.Write("token", "newer");
  EXPECT_EQ(source->Token(), "cached");
}

TEST(TokenSourceTest, ReloadReadsTheFileAtOnceAndSaysWhetherTheTokenChanged) {
  TempDir dir;
  std::string path = dir.Write("token", "old");
  auto source = TokenSource::File(path, std::chrono::hours(1));
  EXPECT_TRUE(source->from_file());
  EXPECT_EQ(source->Token(), "old");
  EXPECT_FALSE(source->Reload()) << "same token";
  dir.Write("token", "new\n");
  EXPECT_EQ(source->Token(), "old") << "cached within the interval";
  EXPECT_TRUE(source->Reload());
  EXPECT_EQ(source->Token(), "new");
  fs::remove(path);
  EXPECT_FALSE(source->Reload()) << "an unreadable file keeps the last good token";
  EXPECT_EQ(source->Token(), "new");
  dir.Write("token", "");
  EXPECT_FALSE(source->Reload()) << "an empty file keeps the last good token";
  EXPECT_EQ(source->Token(), "new");
  auto fixed = TokenSource::Static("abc");
  EXPECT_FALSE(fixed->from_file());
  EXPECT_FALSE(fixed->Reload());
  EXPECT_EQ(fixed->Token(), "abc");
}

TEST(TokenSourceTest, MissingFileGivesAnEmptyTokenUntilItAppears) {
  TempDir dir;
  auto source = TokenSource::File(dir.Path("token"), std::chrono::hours(1));
  EXPECT_EQ(source->Token(), "");
  // An empty cached token is retried at once, whatever the interval.
  dir.Write("token", "late");
  EXPECT_EQ(source->Token(), "late");
}

// ---------------------------------------------------------------------------------------------
// InClusterConfig

// A service-account folder as the kubelet mounts it.
void WriteServiceAccount(const TempDir& dir, bool with_namespace = true) {
  dir.Write("sa/token", "sa-token\n");
  dir.Write("sa/ca.crt", kCaPem);
  if (with_namespace) dir.Write("sa/namespace", "team-a\n");
}

TEST(InClusterConfigTest, BuildsServerFromEnvironment) {
  TempDir dir;
  WriteServiceAccount(dir);
  struct Case {
    std::string host, port, server;
  };
  const std::vector<Case> cases = {
      {"10.96.0.1", "443", "https://10.96.0.1:443"},
      {"kubernetes.default.svc", "6443", "https://kubernetes.default.svc:6443"},
      {"fd00:10:96::1", "443", "https://[fd00:10:96::1]:443"},
      {"::1", "8443", "https://[::1]:8443"},
  };
  for (const Case& c : cases) {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", c.host);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", c.port);
    auto cfg = InClusterConfig(dir.Path("sa"));
    ASSERT_TRUE(cfg.ok()) << c.host << ": " << cfg.status().message();
    EXPECT_EQ(cfg->server, c.server);
    EXPECT_EQ(cfg->ca_pem, kCaPem);
    EXPECT_EQ(TokenOf(*cfg), "sa-token");
    EXPECT_EQ(cfg->default_namespace, "team-a");
    EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  }
}

TEST(InClusterConfigTest, NamespaceDefaultsWithoutTheFile) {
  TempDir dir;
  WriteServiceAccount(dir, /*with_namespace=*/false);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  auto cfg = InClusterConfig(dir.Path("sa"));
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->default_namespace, "default");
}

TEST(InClusterConfigTest, MissingEnvironmentIsAnError) {
  TempDir dir;
  WriteServiceAccount(dir);
  struct Case {
    std::optional<std::string> host, port;
  };
  const std::vector<Case> cases = {
      {std::nullopt, std::nullopt},
      {"10.0.0.1", std::nullopt},
      {std::nullopt, "443"},
      {"", "443"},
      {"10.0.0.1", ""},
  };
  for (const Case& c : cases) {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", c.host);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", c.port);
    auto cfg = InClusterConfig(dir.Path("sa"));
    ASSERT_FALSE(cfg.ok()) << "host " << c.host.value_or("<unset>") << " port " << c.port.value_or("<unset>");
    EXPECT_THAT(cfg.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST/PORT are not set"));
  }
}

TEST(InClusterConfigTest, MissingCaOrTokenIsAnError) {
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  {
    TempDir dir;
    dir.Write("sa/token", "t");
    auto cfg = InClusterConfig(dir.Path("sa"));
    ASSERT_FALSE(cfg.ok());
    EXPECT_THAT(cfg.status().message(), HasSubstr("in-cluster CA"));
  }
  {
    TempDir dir;
    dir.Write("sa/ca.crt", kCaPem);
    auto cfg = InClusterConfig(dir.Path("sa"));
    ASSERT_FALSE(cfg.ok());
    EXPECT_THAT(cfg.status().message(), HasSubstr("in-cluster token " + dir.Path("sa") + "/token cannot be read"));
  }
  {
    TempDir dir;
    dir.Write("sa/token", "t");
    dir.Write("sa/ca.crt", "");
    auto cfg = InClusterConfig(dir.Path("sa"));
    ASSERT_FALSE(cfg.ok());
    EXPECT_EQ(cfg.status().message(), "in-cluster CA " + dir.Path("sa") +
                                          "/ca.crt holds no certificate (expected PEM \"-----BEGIN CERTIFICATE-----\" "
                                          "blocks); it would be the only trust anchor for the API server");
  }
}

TEST(LoadKubeconfigTest, ACaFileWithoutACertificateIsNamedInTheError) {
  TempDir dir;
  const std::string ca = dir.Write("pki/ca.crt", "-----BEGIN PRIVATE KEY-----\nnot a certificate\n-----END PRIVATE KEY-----\n");
  std::string path = dir.Write("config", Kubeconfig("    token: t\n", "    certificate-authority: pki/ca.crt\n"));
  auto cfg = LoadKubeconfig({path});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "cluster \"dev-cluster\": certificate-authority " + ca +
                                        " holds no certificate (expected PEM \"-----BEGIN CERTIFICATE-----\" blocks); "
                                        "it would be the only trust anchor for the API server");
  // A bundle with one good certificate among other text is fine (comments, a second CA).
  dir.Write("pki/ca.crt", std::string("# our CA\n") + kCaPem + testcerts::kCaB);
  auto ok = LoadKubeconfig({path});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->ca_pem, std::string("# our CA\n") + kCaPem + testcerts::kCaB);
}

// ---------------------------------------------------------------------------------------------
// LoadDefaultConfig

// A kubeconfig whose only cluster's server is `server`.
std::string ServerOnly(const std::string& server) {
  return "current-context: c\n"
         "clusters: [{name: k, cluster: {server: '" +
         server +
         "'}}]\n"
         "contexts:\n"
         "- {name: c, context: {cluster: k}}\n"
         "- {name: other, context: {cluster: k, namespace: other-ns}}\n";
}

TEST(LoadDefaultConfigTest, FlagWinsOverEverything) {
  TempDir dir;
  std::string flag = dir.Write("flag", ServerOnly("https://flag"));
  std::string env = dir.Write("env", ServerOnly("https://env"));
  dir.Write("home/.kube/config", ServerOnly("https://home"));
  ScopedEnv kubeconfig("KUBECONFIG", env);
  ScopedEnv home("HOME", dir.Path("home"));
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  for (bool allow_in_cluster : {false, true}) {
    auto cfg = LoadDefaultConfig(flag, "", allow_in_cluster);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->server, "https://flag") << "allow_in_cluster " << allow_in_cluster;
  }
  // The context flag applies to the --kubeconfig file.
  auto ctx = LoadDefaultConfig(flag, "other", false);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  EXPECT_EQ(ctx->default_namespace, "other-ns");
}

TEST(LoadDefaultConfigTest, AMissingFlagFileIsAnErrorEvenWithOtherConfigsAround) {
  TempDir dir;
  std::string env = dir.Write("env", ServerOnly("https://env"));
  ScopedEnv kubeconfig("KUBECONFIG", env);
  auto cfg = LoadDefaultConfig(dir.Path("missing"), "", false);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr(dir.Path("missing")));
}

TEST(LoadDefaultConfigTest, InClusterWhenAllowedAndRunningInAPod) {
  TempDir dir;
  std::string env = dir.Write("env", ServerOnly("https://env"));
  ScopedEnv kubeconfig("KUBECONFIG", env);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.1.2.3");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  auto cfg = LoadDefaultConfig("", "", /*allow_in_cluster=*/true);
  // The in-cluster path reads the real service-account folder: in a Pod it works, elsewhere it
  // fails reading it. Either way $KUBECONFIG must not be consulted.
  if (cfg.ok()) {
    EXPECT_EQ(cfg->server, "https://10.1.2.3:6443");
  } else {
    EXPECT_THAT(cfg.status().message(), HasSubstr("in-cluster"));
  }
}

TEST(LoadDefaultConfigTest, KubeconfigEnvWhenInClusterIsNotAllowedOrNotInAPod) {
  TempDir dir;
  std::string env = dir.Write("env", ServerOnly("https://env"));
  dir.Write("home/.kube/config", ServerOnly("https://home"));
  ScopedEnv kubeconfig("KUBECONFIG", env);
  ScopedEnv home("HOME", dir.Path("home"));
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.1.2.3");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
    auto cfg = LoadDefaultConfig("", "", /*allow_in_cluster=*/false);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->server, "https://env");
  }
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
    auto cfg = LoadDefaultConfig("", "other", /*allow_in_cluster=*/true);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->server, "https://env");
    EXPECT_EQ(cfg->default_namespace, "other-ns");
  }
}

TEST(LoadDefaultConfigTest, KubeconfigEnvIsAColonSeparatedList) {
  TempDir dir;
  std::string a = dir.Write("a", "current-context: c\n");
  std::string b = dir.Write("b", ServerOnly("https://b"));
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv home("HOME", dir.Path("home"));
  const std::vector<std::string> values = {
      a + ":" + b,
      dir.Path("missing") + ":" + a + ":" + b,
      ":" + a + "::" + b + ":",
  };
  for (const std::string& v : values) {
    ScopedEnv kubeconfig("KUBECONFIG", v);
    auto cfg = LoadDefaultConfig("", "", false);
    ASSERT_TRUE(cfg.ok()) << "KUBECONFIG=" << v << ": " << cfg.status().message();
    EXPECT_EQ(cfg->server, "https://b") << "KUBECONFIG=" << v;
  }
}

TEST(LoadDefaultConfigTest, KubeconfigEnvWithOneMissingFileIsAnError) {
  TempDir dir;
  dir.Write("home/.kube/config", ServerOnly("https://home"));
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv home("HOME", dir.Path("home"));
  ScopedEnv kubeconfig("KUBECONFIG", dir.Path("missing"));
  auto cfg = LoadDefaultConfig("", "", false);
  ASSERT_FALSE(cfg.ok()) << "loaded " << cfg->server;
  EXPECT_THAT(cfg.status().message(), HasSubstr(dir.Path("missing")));
}

TEST(LoadDefaultConfigTest, FallsBackToHomeKubeConfig) {
  TempDir dir;
  dir.Write("home/.kube/config", ServerOnly("https://home"));
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv home("HOME", dir.Path("home"));
  for (const std::optional<std::string>& env : {std::optional<std::string>(), std::optional<std::string>("")}) {
    ScopedEnv kubeconfig("KUBECONFIG", env);
    auto cfg = LoadDefaultConfig("", "", true);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->server, "https://home");
  }
}

TEST(LoadDefaultConfigTest, NothingToLoadIsAnError) {
  TempDir dir;
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv kubeconfig("KUBECONFIG", std::nullopt);
  ScopedEnv home("HOME", dir.Path("empty-home"));
  auto cfg = LoadDefaultConfig("", "", true);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr(dir.Path("empty-home") + "/.kube/config"));
}

}  // namespace
}  // namespace berth::k8s
