// The label distance matrix as coordinates (src/core/label_embedding.hpp): W is reproduced by the
// signed squared distances ‖u_l − u_l'‖²_η; a squared Euclidean W has no negative coordinate; a
// non-Euclidean one has some; and prepare() stores the keys' copy η⊙q only then.
#include <gtest/gtest.h>

#include <cmath>

#include "core/label_embedding.hpp"
#include "core/prepare.hpp"
#include "label_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

// max over (l, l') of |‖u_l − u_l'‖²_η − W[l, l']|.
double reconstruction_error(const fs::detail::label_embedding& e, const reference::label_matrix& w) {
  double worst = 0;
  for (std::int64_t l = 0; l < e.label_count; ++l) {
    for (std::int64_t k = 0; k < e.label_count; ++k) {
      double signed_sq = 0;
      for (std::int64_t c = 0; c < e.dim; ++c) {
        const double t = e.coordinates[l * e.dim + c] - e.coordinates[k * e.dim + c];
        signed_sq += (c < e.dim - e.negative_dim ? 1.0 : -1.0) * t * t;
      }
      worst = std::max(worst, std::abs(signed_sq - w.distances[l * w.count + k]));
    }
  }
  return worst;
}

}  // namespace

TEST(LabelEmbedding, EuclideanMatrixHasOnlyPositiveCoordinates) {
  for (std::int64_t label_count : {1L, 2L, 7L, 40L}) {
    const reference::label_matrix w = euclidean_label_matrix(label_count, 5 + static_cast<std::uint64_t>(label_count));
    const fs::detail::label_embedding e = fs::detail::embed_label_distances(w.distances, label_count);
    EXPECT_EQ(e.negative_dim, 0) << "L=" << label_count;
    EXPECT_LE(e.dim, std::min<std::int64_t>(3, label_count - 1)) << "rank of −½JWJ ≤ 3 for points in R³";
    EXPECT_LE(reconstruction_error(e, w), 1e-12 * max_abs(w.distances) + 1e-300) << "L=" << label_count;
  }
}

TEST(LabelEmbedding, NonEuclideanMatrixUsesTheNegativeSignature) {
  for (std::int64_t label_count : {3L, 7L, 20L, 200L}) {
    const reference::label_matrix w = non_euclidean_label_matrix(label_count, 9 + static_cast<std::uint64_t>(label_count));
    ASSERT_LT(non_psd_certificate(w), 0) << "−½JWJ must have a negative eigenvalue";
    const fs::detail::label_embedding e = fs::detail::embed_label_distances(w.distances, label_count);
    EXPECT_GT(e.negative_dim, 0) << "L=" << label_count;
    EXPECT_LE(e.dim, label_count - 1);
    EXPECT_LE(reconstruction_error(e, w), 1e-11 * max_abs(w.distances)) << "L=" << label_count;
  }
}

TEST(LabelEmbedding, ZeroMatrixAddsNoCoordinates) {
  const std::vector<double> zero(16, 0.0);
  const fs::detail::label_embedding e = fs::detail::embed_label_distances(zero, 4);
  EXPECT_EQ(e.dim, 0);
  EXPECT_EQ(e.negative_dim, 0);
}

// prepare(): features first, then √(λy/λx)·u_l; the key copy exists only with negative coordinates,
// and equals the centred points with those coordinates negated; the cost scale is s·λx.
TEST(LabelEmbedding, PreparedCloudsCarryTheKeyCopyOnlyWhenNeeded) {
  reference::cloud x = reference::random_cloud(11, 2, 1);
  reference::cloud y = reference::random_cloud(9, 2, 2);
  assign_labels(x, 5, 3);
  assign_labels(y, 5, 4);
  fs::options o;
  for (bool euclidean : {true, false}) {
    reference::label_matrix w = euclidean ? euclidean_label_matrix(5, 6) : non_euclidean_label_matrix(5, 7);
    w.feature_weight = 2.0;
    w.label_weight = 0.5;
    const fs::detail::prepared_inputs in = fs::detail::prepare(make_labelled_problem(x, y, w, 0.3, 0.5), o);
    const fs::detail::label_embedding e = fs::detail::embed_label_distances(w.distances, 5);
    const fs::detail::prepared_cloud& px = in.kernel.x;
    EXPECT_EQ(in.dim, 2);
    EXPECT_EQ(px.dim, 2 + e.dim);
    EXPECT_EQ(px.negative_dim, e.negative_dim);
    EXPECT_EQ(in.kernel.y.negative_dim, e.negative_dim);
    EXPECT_DOUBLE_EQ(in.kernel.cost_scale, 0.5 * 2.0);
    if (euclidean) {
      EXPECT_EQ(px.negative_dim, 0);
      EXPECT_TRUE(px.key_points.empty());
      EXPECT_EQ(&px.key_role_points(), &px.points);
      continue;
    }
    ASSERT_GT(px.negative_dim, 0);
    ASSERT_EQ(px.key_points.size(), px.points.size());
    for (std::int64_t i = 0; i < px.count; ++i) {
      for (std::int64_t k = 0; k < px.dim; ++k) {
        const double sign = k < px.dim - px.negative_dim ? 1.0 : -1.0;
        EXPECT_EQ(px.key_points[i * px.dim + k], sign * px.points[i * px.dim + k]);
      }
    }
    // Differences of the label coordinates are √(λy/λx)·(u_l − u_l'), whatever the centring.
    const double c = std::sqrt(0.5 / 2.0);
    for (std::int64_t k = 0; k < e.dim; ++k) {
      const double got = px.points[0 * px.dim + 2 + k] - px.points[1 * px.dim + 2 + k];
      const double want = c * (e.coordinates[x.labels[0] * e.dim + k] - e.coordinates[x.labels[1] * e.dim + k]);
      EXPECT_NEAR(got, want, 1e-14);
    }
  }
}
