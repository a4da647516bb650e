package offline

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fuzzServices() []*corev1.Service {
	return []*corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "svc"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}}
}
