"""The admission webhook server: AdmissionReview and ConversionReview handlers. Holds no state between requests."""
