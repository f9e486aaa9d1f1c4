package syntax

// RetryOnStatuses are the response statuses HAProxy's "retry-on" takes
// (HAProxy 2.6 and 3.x): a request is retried on no others.
var RetryOnStatuses = []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}
