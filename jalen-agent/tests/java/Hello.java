/** The smallest program: start-up time of the JVM with and without the agent. */
public class Hello {
    public static void main(String[] args) {
        System.out.println("hello");
    }
}
